package llama

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
)

// GateRun is N packs of one gate shape as both parties hold them: their
// pack bytes end to end and their additive shares of the masks (RIn: one
// per pack, two per MaxPool pack in input order; ROut: one per pack).
type GateRun struct {
	G     Gate
	N     int
	Packs [2][]byte
	RIn   [2][]uint64
	ROut  [2][]uint64
}

// check reports whether the run's sizes agree with its shape.
func (r *GateRun) check() error {
	if err := r.G.Validate(); err != nil {
		return err
	}
	for b := range 2 {
		if want := r.N * r.G.PackSize(); len(r.Packs[b]) != want {
			return gateErr("%v: party %d holds %d bytes of packs, want %d (%d packs of %d)", r.G, b, len(r.Packs[b]), want, r.N, r.G.PackSize())
		}
		if len(r.RIn[b]) != r.N*r.G.Masks() || len(r.ROut[b]) != r.N {
			return gateErr("%v: party %d holds %d r_in and %d r_out shares, want %d and %d", r.G, b, len(r.RIn[b]), len(r.ROut[b]), r.N*r.G.Masks(), r.N)
		}
	}
	return nil
}

// masks opens pack i's masks from the two parties' shares.
func (r *GateRun) masks(i int) (rin [2]uint64, rout uint64) {
	m := mask(r.G.Bits)
	k := r.G.Masks()
	for j := range k {
		rin[j] = (r.RIn[0][i*k+j] + r.RIn[1][i*k+j]) & m
	}
	return rin, (r.ROut[0][i] + r.ROut[1][i]) & m
}

// CheckGates evaluates every pack of the run with both parties' packs
// (LLAMA's online step, GatePack.Eval) at points random plain inputs
// (MaxPool: pairs with |x| + |y| < 2^(Bits−1)) masked with the opened
// masks, and returns nil if each opens to the gate's function — ReLU on
// the signed value, the exact arithmetic shift, the signed max — plus
// r_out, else an error naming the pack and the input.
func CheckGates(r *GateRun, points int) error {
	if err := r.check(); err != nil {
		return err
	}
	g, size := r.G, r.G.PackSize()
	m := mask(g.Bits)
	var rnd [16]byte
	for i := range r.N {
		var pk [2]*GatePack
		for b := range 2 {
			var err error
			if pk[b], err = ParseGate(g, r.Packs[b][i*size:(i+1)*size]); err != nil {
				return fmt.Errorf("%v pack %d, party %d: %w", g, i, b, err)
			}
		}
		rin, rout := r.masks(i)
		for k := range points {
			if _, err := rand.Read(rnd[:]); err != nil {
				return err
			}
			x, y := binary.LittleEndian.Uint64(rnd[:8])&m, binary.LittleEndian.Uint64(rnd[8:])&m
			if k == 0 {
				x, y = 0, 0
			}
			if g.Kind == GateMaxPool {
				x, y = smallSigned(x, g.Bits), smallSigned(y, g.Bits)
			}
			xh, yh := (x+rin[0])&m, (y+rin[1])&m
			o0, err := pk[0].Eval(0, xh, yh)
			if err != nil {
				return err
			}
			o1, err := pk[1].Eval(1, xh, yh)
			if err != nil {
				return err
			}
			if got, want := (o0+o1-rout)&m, GateFunc(g, x, y); got != want {
				return gateErr("%v pack %d at x=%d y=%d: the parties' shares open to %d, want %d", g, i, x, y, got, want)
			}
		}
		pk[0].Wipe()
		pk[1].Wipe()
	}
	return nil
}

// smallSigned maps a random word into |v| < 2^(bits−2), as a bits-bit
// two's-complement value.
func smallSigned(v uint64, bits int) uint64 {
	mag := v & mask(bits-2)
	if v>>uint(bits-1)&1 == 1 {
		return -mag & mask(bits)
	}
	return mag
}

// GateFunc is the function a gate computes on plain inputs of its width:
// ReLU of x read as signed, x >>arith Shift, or the signed max of x and y.
func GateFunc(g Gate, x, y uint64) uint64 {
	bw := g.Bits
	m := mask(bw)
	sx, sy := toSigned(x, bw), toSigned(y, bw)
	switch g.Kind {
	case GateReLU:
		if sx > 0 {
			return x & m
		}
		return 0
	case GateARS:
		return uint64(sx>>uint(g.Shift)) & m
	default:
		if sx >= sy {
			return x & m
		}
		return y & m
	}
}

func toSigned(v uint64, bw int) int64 {
	v &= mask(bw)
	if bw < 64 && v>>uint(bw-1) == 1 {
		return int64(v) - int64(1)<<uint(bw)
	}
	return int64(v)
}

// RedealGates re-makes the run with GenGates, kord's in-process dealer,
// from the DCF roots and party 0's share draws read out of the packs and
// the masks opened from the shares, and returns nil if both parties' bytes
// come out identical: the packs are exactly what a dealer would write for
// those draws.
func RedealGates(r *GateRun) error {
	if err := r.check(); err != nil {
		return err
	}
	g, size := r.G, r.G.PackSize()
	sec := make([]GateSecrets, r.N)
	defer clear(sec)
	for i := range sec {
		var pk [2]*GatePack
		for b := range 2 {
			var err error
			if pk[b], err = ParseGate(g, r.Packs[b][i*size:(i+1)*size]); err != nil {
				return fmt.Errorf("%v pack %d, party %d: %w", g, i, b, err)
			}
		}
		for d := range pk[0].DCF {
			sec[i].Roots[d] = [2]Block{pk[0].DCF[d].Root, pk[1].DCF[d].Root}
		}
		copy(sec[i].Split[:], pk[0].Fields)
		sec[i].RIn, sec[i].ROut = r.masks(i)
		pk[0].Wipe()
		pk[1].Wipe()
	}
	out := [2][]byte{make([]byte, r.N*size), make([]byte, r.N*size)}
	defer clear(out[0])
	defer clear(out[1])
	if err := GenGates(g, sec, out[0], out[1]); err != nil {
		return err
	}
	for b := range 2 {
		for i := range r.N {
			if string(out[b][i*size:(i+1)*size]) != string(r.Packs[b][i*size:(i+1)*size]) {
				return gateErr("%v pack %d: party %d's bytes differ from the in-process dealer's for the same roots, masks and splits", g, i, b)
			}
		}
	}
	return nil
}
