package fss

import (
	"encoding/binary"
	"fmt"

	"github.com/kord-fss/kord/internal/prg"
)

// ParseKeys parses n kord-v1 keys of one shape laid out at a fixed stride
// in data (key i at data[i·stride : (i+1)·stride], as a batch generator
// or a module's slab writes them): each exactly as ParseKey would, but
// with a handful of allocations for all of them instead of several per
// key. The keys' correction words share backing arrays, so a caller that
// keeps one key keeps the batch's arrays alive; Wipe on a key clears its
// own part. The first key ParseKey would refuse fails the call, named by
// index and wrapping ParseKey's error; so does a key of another shape than
// key 0's.
func ParseKeys(data []byte, stride, n int) ([]*Key, error) {
	if n < 0 || stride < headerSize || len(data)/stride != n || len(data)%stride != 0 {
		return nil, fmt.Errorf("%w: %d bytes are not %d keys of %d bytes", ErrLength, len(data), n, stride)
	}
	if n == 0 {
		return nil, nil
	}
	var k0 Key
	if err := k0.UnmarshalBinary(data[:stride]); err != nil {
		return nil, fmt.Errorf("fss: key 0: %w", err)
	}
	p := k0.p
	k0.Wipe()
	l := p.InBits
	keys, out := make([]Key, n), make([]*Key, n)
	seeds := make([]prg.Block, n*l)
	var vals []uint64
	if p.Type == DCF {
		vals = make([]uint64, n*l)
	}
	for i := range n {
		var v []uint64
		if vals != nil {
			v = vals[i*l : (i+1)*l : (i+1)*l]
		}
		if err := keys[i].parseShaped(data[i*stride:(i+1)*stride], p, seeds[i*l:(i+1)*l:(i+1)*l], v); err != nil {
			clear(seeds)
			clear(vals)
			clear(keys)
			return nil, fmt.Errorf("fss: key %d: %w", i, err)
		}
		out[i] = &keys[i]
	}
	return out, nil
}

// parseShaped is UnmarshalBinary for a key expected to have shape p, into
// the given correction-word arrays (l long each; valCW nil unless DCF).
// Anything but a well-formed key of shape p fails with UnmarshalBinary's
// own error, or, for a well-formed key of another shape, an ErrLength
// naming both shapes.
func (k *Key) parseShaped(data []byte, p Params, seedCW []prg.Block, valCW []uint64) error {
	if len(data) != p.KeySize() || data[0] != magic || data[1] != version || Type(data[2]) != p.Type || data[3] > 1 ||
		int(data[4]) != p.InBits || int(data[5]) != p.OutBits {
		var t Key
		if err := t.UnmarshalBinary(data); err != nil {
			return err
		}
		t.Wipe()
		return fmt.Errorf("%w: a %v key among %v keys", ErrLength, t.p, p)
	}
	nk := Key{p: p, party: data[3], seedCW: seedCW, valCW: valCW}
	off, err := parseTree(data, headerSize, &nk.root, seedCW, &nk.tL, &nk.tR)
	if err != nil {
		return err
	}
	vb, mask := valueBytes(p.OutBits), prg.Mask(p.OutBits)
	read := func() uint64 {
		var w [8]byte
		copy(w[:], data[off:off+vb])
		off += vb
		return binary.LittleEndian.Uint64(w[:])
	}
	for j := range valCW {
		if valCW[j] = read(); valCW[j]&^mask != 0 {
			return fmt.Errorf("%w: VCW_%d", ErrValueBits, j+1)
		}
	}
	if nk.final = read(); nk.final&^mask != 0 {
		return fmt.Errorf("%w: CW_last", ErrValueBits)
	}
	*k = nk
	return nil
}
