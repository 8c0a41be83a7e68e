package ntru

import (
	"crypto/sha256"
	"encoding/binary"
)

// hashStream is the byte stream behind IGF-2 and MGF-TP-1:
// Z = SHA-256(seed), then SHA-256(Z ‖ counter) for counter = 0, 1, 2, …
// with the counter as a 4-byte big-endian integer. The reference's minimum
// call counts only pre-generate blocks of the same stream, so they do not
// change any output.
type hashStream struct {
	in      [sha256.Size + 4]byte // Z ‖ counter
	counter uint32
	block   [sha256.Size]byte
	pos     int
}

func newHashStream(seed []byte) *hashStream {
	h := &hashStream{pos: sha256.Size}
	z := sha256.Sum256(seed)
	copy(h.in[:], z[:])
	return h
}

func (h *hashStream) nextByte() byte {
	if h.pos == len(h.block) {
		binary.BigEndian.PutUint32(h.in[sha256.Size:], h.counter)
		h.counter++
		h.block = sha256.Sum256(h.in[:])
		h.pos = 0
	}
	b := h.block[h.pos]
	h.pos++
	return b
}

// bitReader takes big-endian bit fields from a hashStream, most significant
// bit first, across byte boundaries.
type bitReader struct {
	src   *hashStream
	acc   uint64
	nbits uint
}

func (r *bitReader) read(n uint) uint32 {
	for r.nbits < n {
		r.acc = r.acc<<8 | uint64(r.src.nextByte())
		r.nbits += 8
	}
	r.nbits -= n
	v := uint32(r.acc>>r.nbits) & (1<<n - 1)
	r.acc &= 1<<r.nbits - 1
	return v
}
