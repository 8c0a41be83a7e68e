package ot

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Kappa is the security parameter of the extension: the number of base
// OTs and the width of the rows, in bits.
const Kappa = 128

// BaseMessageSize is the size of the extension sender's base-OT flight.
const BaseMessageSize = Kappa * PointSize

// tccr is π, the fixed-key AES permutation of the correlation-robust hash.
var tccr = func() cipher.Block {
	k := sha256.Sum256([]byte("kord/baseline/ot/tccr"))
	c, err := aes.NewCipher(k[:16])
	if err != nil {
		panic(err) // a 16-byte key never fails
	}
	return c
}()

// hashBlock returns H((j, k), x) = π(π(x) ⊕ (j, k)) ⊕ π(x).
func hashBlock(j, k uint64, x *[16]byte) (out [16]byte) {
	var px, in [16]byte
	tccr.Encrypt(px[:], x[:])
	binary.LittleEndian.PutUint64(in[:8], j)
	binary.LittleEndian.PutUint64(in[8:], k)
	for i := range in {
		in[i] ^= px[i]
	}
	tccr.Encrypt(out[:], in[:])
	for i := range out {
		out[i] ^= px[i]
	}
	return out
}

// xorPad XORs the pad H((j, 0), x) ‖ H((j, 1), x) ‖ … into dst.
func xorPad(dst []byte, j uint64, x *[16]byte) {
	for k := uint64(0); len(dst) > 0; k++ {
		h := hashBlock(j, k, x)
		n := subtle16(dst, &h)
		dst = dst[n:]
	}
}

func subtle16(dst []byte, h *[16]byte) int {
	n := min(len(dst), 16)
	for i := range n {
		dst[i] ^= h[i]
	}
	return n
}

func stream(seed [16]byte) cipher.Stream {
	c, err := aes.NewCipher(seed[:])
	if err != nil {
		panic(err) // a 16-byte key never fails
	}
	var iv [16]byte
	return cipher.NewCTR(c, iv[:])
}

// ReceiverSetup is the extension receiver between its two base-OT flights.
type ReceiverSetup struct{ bs *BaseSender }

// NewReceiverSetup starts the extension receiver: its first flight (the
// base-OT sender's point) goes to the extension sender.
func NewReceiverSetup(rnd io.Reader) (*ReceiverSetup, []byte, error) {
	bs, err := NewBaseSender(rnd)
	if err != nil {
		return nil, nil, err
	}
	return &ReceiverSetup{bs: bs}, bs.Message(), nil
}

// Finish reads the extension sender's base-OT flight.
func (rs *ReceiverSetup) Finish(msg []byte) (*Receiver, error) {
	k0, k1, err := rs.bs.Keys(msg, Kappa)
	if err != nil {
		return nil, err
	}
	r := &Receiver{}
	for i := range Kappa {
		r.k0[i], r.k1[i] = k0[i], k1[i]
		r.g0[i], r.g1[i] = stream(k0[i]), stream(k1[i])
	}
	return r, nil
}

// NewSender draws s, answers the receiver's first flight with its base-OT
// flight (BaseMessageSize bytes) and returns the extension sender.
func NewSender(rnd io.Reader, receiverMsg []byte) (*Sender, []byte, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	s := &Sender{}
	if _, err := io.ReadFull(rnd, s.s[:]); err != nil {
		return nil, nil, fmt.Errorf("ot: drawing s: %w", err)
	}
	choices := make([]bool, Kappa)
	for i := range choices {
		choices[i] = s.s[i/8]>>(i%8)&1 == 1
	}
	msg, keys, err := BaseReceive(rnd, receiverMsg, choices)
	if err != nil {
		return nil, nil, err
	}
	for i := range Kappa {
		s.k[i] = keys[i]
		s.g[i] = stream(keys[i])
	}
	return s, msg, nil
}

// Receiver is the extension receiver of one session direction. Its
// batches must be accepted by the sender in the order they are chosen.
type Receiver struct {
	k0, k1 [Kappa][16]byte // the base-OT seeds (for Fork)
	g0, g1 [Kappa]cipher.Stream
	next   uint64 // index of the next OT
}

// Sender is the extension sender of one session direction.
type Sender struct {
	s    [Kappa / 8]byte
	k    [Kappa][16]byte // the chosen base-OT seeds (for Fork)
	g    [Kappa]cipher.Stream
	next uint64
}

// ColumnsSize is the size of the receiver's message for m OTs.
func ColumnsSize(m int) int { return Kappa * ((m + 7) / 8) }

// RecvBatch is a batch of OTs whose choices are fixed; its messages are
// received with Receive.
type RecvBatch struct {
	first   uint64
	choices []bool
	rows    [][16]byte // t_j
}

// SendBatch is the sender's side of a batch: the rows q_j.
type SendBatch struct {
	first uint64
	s     [16]byte
	rows  [][16]byte
}

// Len is the number of OTs in the batch.
func (b *RecvBatch) Len() int { return len(b.choices) }

// Len is the number of OTs in the batch.
func (b *SendBatch) Len() int { return len(b.rows) }

// transpose turns Kappa columns of m bits into m rows of Kappa bits.
func transpose(cols [][]byte, m int) [][16]byte {
	rows := make([][16]byte, m)
	for i, c := range cols {
		for j := range m {
			rows[j][i/8] |= (c[j/8] >> (j % 8) & 1) << (i % 8)
		}
	}
	return rows
}

// Choose fixes the choices of the next len(choices) OTs and returns the
// columns message for the sender (ColumnsSize bytes).
func (r *Receiver) Choose(choices []bool) ([]byte, *RecvBatch, error) {
	m := len(choices)
	if m == 0 {
		return nil, nil, errors.New("ot: a batch needs at least one OT")
	}
	nb := (m + 7) / 8
	rb := make([]byte, nb)
	for j, c := range choices {
		if c {
			rb[j/8] |= 1 << (j % 8)
		}
	}
	msg := make([]byte, Kappa*nb)
	cols := make([][]byte, Kappa)
	for i := range Kappa {
		t := make([]byte, nb)
		r.g0[i].XORKeyStream(t, t)
		u := msg[i*nb : (i+1)*nb]
		r.g1[i].XORKeyStream(u, u)
		for k := range u {
			u[k] ^= t[k] ^ rb[k]
		}
		cols[i] = t
	}
	b := &RecvBatch{first: r.next, choices: append([]bool(nil), choices...), rows: transpose(cols, m)}
	r.next += uint64(m)
	return msg, b, nil
}

// ErrMessage is returned for an OT message of the wrong shape.
var ErrMessage = errors.New("ot: malformed message")

// Accept reads the receiver's columns message for the next m OTs.
func (s *Sender) Accept(msg []byte, m int) (*SendBatch, error) {
	if m < 1 {
		return nil, fmt.Errorf("%w: a batch of %d OTs", ErrMessage, m)
	}
	nb := (m + 7) / 8
	if len(msg) != Kappa*nb {
		return nil, fmt.Errorf("%w: columns message is %d bytes, want %d for %d OTs", ErrMessage, len(msg), Kappa*nb, m)
	}
	cols := make([][]byte, Kappa)
	for i := range Kappa {
		q := make([]byte, nb)
		s.g[i].XORKeyStream(q, q)
		if s.s[i/8]>>(i%8)&1 == 1 {
			u := msg[i*nb : (i+1)*nb]
			for k := range q {
				q[k] ^= u[k]
			}
		}
		cols[i] = q
	}
	b := &SendBatch{first: s.next, s: s.s, rows: transpose(cols, m)}
	s.next += uint64(m)
	return b, nil
}

// MessagesSize is the size of the sender's message for n OTs of
// msgLen-byte messages.
func MessagesSize(n, msgLen int) int { return 2 * n * msgLen }

// Send masks the message pairs of OTs lo..lo+n−1 of the batch, where n =
// len(m0)/msgLen: m0 and m1 hold the n messages for choice 0 and 1, each
// msgLen bytes, back to back. It returns the message for the receiver.
func (b *SendBatch) Send(lo, msgLen int, m0, m1 []byte) ([]byte, error) {
	if msgLen < 1 || len(m0) != len(m1) || len(m0)%msgLen != 0 {
		return nil, fmt.Errorf("ot: Send: %d and %d message bytes are not whole %d-byte messages", len(m0), len(m1), msgLen)
	}
	n := len(m0) / msgLen
	if lo < 0 || lo+n > len(b.rows) {
		return nil, fmt.Errorf("ot: Send: OTs %d..%d are outside the batch of %d", lo, lo+n-1, len(b.rows))
	}
	out := make([]byte, 2*n*msgLen)
	for k := range n {
		j := b.first + uint64(lo+k)
		q := b.rows[lo+k]
		y0 := out[2*k*msgLen : (2*k+1)*msgLen]
		y1 := out[(2*k+1)*msgLen : (2*k+2)*msgLen]
		copy(y0, m0[k*msgLen:])
		copy(y1, m1[k*msgLen:])
		xorPad(y0, j, &q)
		for i := range q {
			q[i] ^= b.s[i]
		}
		xorPad(y1, j, &q)
	}
	return out, nil
}

// Receive unmasks the chosen messages of OTs lo..lo+n−1 from the sender's
// message (MessagesSize(n, msgLen) bytes) and returns them back to back.
func (b *RecvBatch) Receive(lo, n, msgLen int, msg []byte) ([]byte, error) {
	if msgLen < 1 || n < 1 || lo < 0 || lo+n > len(b.rows) {
		return nil, fmt.Errorf("%w: OTs %d..%d of a batch of %d, %d-byte messages", ErrMessage, lo, lo+n-1, len(b.rows), msgLen)
	}
	if len(msg) != MessagesSize(n, msgLen) {
		return nil, fmt.Errorf("%w: messages are %d bytes, want %d for %d OTs of %d bytes", ErrMessage, len(msg), MessagesSize(n, msgLen), n, msgLen)
	}
	out := make([]byte, n*msgLen)
	for k := range n {
		c := 0
		if b.choices[lo+k] {
			c = 1
		}
		dst := out[k*msgLen : (k+1)*msgLen]
		copy(dst, msg[(2*k+c)*msgLen:])
		t := b.rows[lo+k]
		xorPad(dst, b.first+uint64(lo+k), &t)
	}
	return out, nil
}

// forkSeed is the seed of fork id derived from a base seed: AES_k(id, 1),
// a PRF of the seed.
func forkSeed(k [16]byte, id uint64) (out [16]byte) {
	c, err := aes.NewCipher(k[:])
	if err != nil {
		panic(err) // a 16-byte key never fails
	}
	var in [16]byte
	binary.LittleEndian.PutUint64(in[:8], id)
	in[8] = 1
	c.Encrypt(out[:], in[:])
	return out
}

// MaxForks bounds the fork ids: a fork's OT indices start at id·2^40, so
// the hash tweaks of different forks never meet.
const MaxForks = 1 << 20

// Fork returns an independent extension receiver for fork id (1 ≤ id <
// MaxForks), from the same base OTs: its column streams are keyed by a PRF
// of the base seeds, and its OT indices (the hash tweaks) are disjoint from
// every other fork's and from the parent's. The sender's Fork(id) is its
// peer. Forks let concurrent key generations share one set of base OTs
// without sharing a stream.
func (r *Receiver) Fork(id uint64) (*Receiver, error) {
	if id < 1 || id >= MaxForks {
		return nil, fmt.Errorf("ot: fork id %d is outside 1..%d", id, MaxForks-1)
	}
	f := &Receiver{next: id << 40}
	for i := range Kappa {
		f.k0[i], f.k1[i] = forkSeed(r.k0[i], id), forkSeed(r.k1[i], id)
		f.g0[i], f.g1[i] = stream(f.k0[i]), stream(f.k1[i])
	}
	return f, nil
}

// Fork is the sender's side of Receiver.Fork.
func (s *Sender) Fork(id uint64) (*Sender, error) {
	if id < 1 || id >= MaxForks {
		return nil, fmt.Errorf("ot: fork id %d is outside 1..%d", id, MaxForks-1)
	}
	f := &Sender{s: s.s, next: id << 40}
	for i := range Kappa {
		f.k[i] = forkSeed(s.k[i], id)
		f.g[i] = stream(f.k[i])
	}
	return f, nil
}
