package llama

import (
	"encoding/binary"
	"fmt"
)

// Eval returns party's Group shares of β·[x < α] at x, as LLAMA's evalDCF
// computes them for that party, reduced mod 2^Bout. party 0 evaluates the
// server key, party 1 the client key.
func Eval(party int, k *Key, x uint64) ([]uint64, error) {
	out := make([]uint64, k.P.Group)
	if err := k.EvalInto(party, x, out); err != nil {
		return nil, err
	}
	return out, nil
}

// EvalInto is Eval writing into out (len Group).
func (k *Key) EvalInto(party int, x uint64, out []uint64) error {
	if err := k.check(); err != nil {
		return err
	}
	if party != 0 && party != 1 {
		return fmt.Errorf("%w: %d", ErrParty, party)
	}
	if x&^mask(k.P.InBits) != 0 {
		return fmt.Errorf("%w: x = %d, Bin = %d", ErrInput, x, k.P.InBits)
	}
	if len(out) != k.P.Group {
		return fmt.Errorf("%w: %d, group %d", ErrOutShape, len(out), k.P.Group)
	}
	l, g := k.P.InBits, k.P.Group
	m := mask(k.P.OutBits)
	cv := newConverter(k.P)
	w := make([]uint64, g)
	acc := out
	clear(acc)
	s := k.Root
	for i := 0; i < l; i++ {
		xi := byte(x>>uint(l-1-i)) & 1
		t := uint64(s[0] & 1)
		var ex [1][4]Block
		if err := expandNodes(ex[:], []Block{s}); err != nil {
			return err
		}
		child := ex[0][ctrSeedL+xi]
		if err := cv.convert(w, ex[0][ctrValL+xi]); err != nil {
			return err
		}
		for e := range acc {
			acc[e] += w[e] + t*k.V[i*g+e]
		}
		// child ^= t·(correction with bits 0,1 replaced by this side's t
		// correction), with a mask rather than a branch on t.
		corr := k.CW[i]
		tcw := uint64(corr[0]>>(1-xi)) & 1 // left: bit 1, right: bit 0
		tm := -t
		le := binary.LittleEndian
		le.PutUint64(child[:8], le.Uint64(child[:8])^(le.Uint64(corr[:8])&^3|tcw)&tm)
		le.PutUint64(child[8:], le.Uint64(child[8:])^le.Uint64(corr[8:])&tm)
		s = child
	}
	t := uint64(s[0] & 1)
	if err := cv.convert(w, aesKey(s)); err != nil {
		return err
	}
	for e := range acc {
		acc[e] += w[e] + t*k.G[e]
		if party == 1 {
			acc[e] = -acc[e]
		}
		acc[e] &= m
	}
	return nil
}
