package llama

import (
	"encoding/binary"
	"fmt"
)

// GatePack is one party's parsed gate pack.
type GatePack struct {
	G      Gate
	DCF    []*Key   // in file order (gates.md)
	Fields []uint64 // the share fields, in file order
}

// ParseGate reads one pack of shape g. It is strict: the length must be
// exactly g.PackSize(), every DCF must parse (llama.Parse) and no share
// field may have bits at or above g.Bits. Any byte string yields a pack
// or an error naming what is wrong.
func ParseGate(g Gate, data []byte) (*GatePack, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if want := g.PackSize(); len(data) != want {
		return nil, gateErr("%v pack: %d bytes, want %d", g, len(data), want)
	}
	pk := &GatePack{G: g}
	off := 0
	for d, p := range g.DCFs() {
		k, err := Parse(p, data[off:off+p.KeySize()])
		if err != nil {
			return nil, gateErr("%v pack: DCF %d: %v", g, d, err)
		}
		pk.DCF = append(pk.DCF, k)
		off += p.KeySize()
	}
	e, m := ElemBytes(g.Bits), mask(g.Bits)
	for f := 0; f < g.ShareFields(); f++ {
		var b [8]byte
		copy(b[:], data[off:off+e])
		v := binary.LittleEndian.Uint64(b[:])
		if v&^m != 0 {
			return nil, gateErr("%v pack: share field %d at offset %d has bits at or above %d", g, f, off, g.Bits)
		}
		pk.Fields = append(pk.Fields, v)
		off += e
	}
	return pk, nil
}

// SplitGates cuts n packs of shape g laid end to end (a gates .dat file,
// or one kind's run of it) into parsed packs.
func SplitGates(g Gate, data []byte) ([]*GatePack, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	size := g.PackSize()
	if len(data)%size != 0 {
		return nil, gateErr("%d bytes are not a whole number of %d-byte %v packs", len(data), size, g)
	}
	out := make([]*GatePack, 0, len(data)/size)
	for off := 0; off < len(data); off += size {
		pk, err := ParseGate(g, data[off:off+size])
		if err != nil {
			return nil, fmt.Errorf("pack %d: %w", off/size, err)
		}
		out = append(out, pk)
	}
	return out, nil
}

// Eval is LLAMA's online step for the pack at the masked input x (and y,
// the second masked input, for MaxPool; ignored otherwise): party's share
// of f(x − r_in) + r_out, where f is ReLU on the signed value, the
// arithmetic shift right by Shift, or the signed max of the two inputs
// (which LLAMA computes correctly when |x| + |y| < 2^(Bits−1)). It is
// evalRelu, evalARS and evalMaxpool of LLAMA's spline.cpp and pubdiv.cpp.
func (pk *GatePack) Eval(party int, x, y uint64) (uint64, error) {
	g := pk.G
	if party != 0 && party != 1 {
		return 0, fmt.Errorf("%w: %d", ErrParty, party)
	}
	m := mask(g.Bits)
	if x&^m != 0 || y&^m != 0 {
		return 0, gateErr("%v: masked input does not fit in %d bits", g, g.Bits)
	}
	switch g.Kind {
	case GateReLU:
		return pk.relu(party, x, pk.Fields[:5])
	case GateMaxPool:
		r, err := pk.relu(party, (x-y)&m, pk.Fields[:5])
		if err != nil {
			return 0, err
		}
		return (r + uint64(party)*y + pk.Fields[5]) & m, nil
	default:
		return pk.ars(party, x)
	}
}

// relu is evalRelu: the DCF at x−1 and x−1−2^(Bits−1) selects the
// coefficients of x ↦ x (or 0) for the interval x − r_in falls in.
func (pk *GatePack) relu(party int, x uint64, f []uint64) (uint64, error) {
	bw := pk.G.Bits
	m := mask(bw)
	half := uint64(1) << uint(bw-1)
	lo, hi := make([]uint64, 2), make([]uint64, 2)
	if err := pk.DCF[0].EvalInto(party, (x-1)&m, lo); err != nil {
		return 0, err
	}
	if err := pk.DCF[0].EvalInto(party, (x-1-half)&m, hi); err != nil {
		return 0, err
	}
	var cx uint64
	if x > 0 {
		cx++
	}
	if x > half {
		cx--
	}
	w0 := cx*f[2] - lo[0] + hi[0] + f[0]
	w1 := cx*f[3] - lo[1] + hi[1] + f[1]
	return (f[4] + w0*x + w1) & m, nil
}

// ars is evalARS: the shift DCF corrects the carry out of the low Shift
// bits, the dual DCF the carry into and the value of the top bit.
func (pk *GatePack) ars(party int, x uint64) (uint64, error) {
	bw, s := pk.G.Bits, pk.G.Shift
	m := mask(bw)
	xs := x & mask(s)
	xn := x & mask(bw-1)
	msb := x >> uint(bw-1)
	ts := make([]uint64, 1)
	if err := pk.DCF[0].EvalInto(party, (mask(s)-xs)&mask(s), ts); err != nil {
		return 0, err
	}
	dd := make([]uint64, 2)
	if err := pk.DCF[1].EvalInto(party, (mask(bw-1)-xn)&mask(bw-1), dd); err != nil {
		return 0, err
	}
	tn := dd[0] + pk.Fields[0]
	mn := dd[1] + pk.Fields[1]
	p := uint64(party)
	mb := p*msb + mn - 2*msb*mn
	res := p*(xn>>uint(s)) + pk.Fields[2] + ts[0] - (uint64(1)<<uint(bw-s-1))*(tn+mb)
	return res & m, nil
}

// Wipe zeroes the pack's secrets.
func (pk *GatePack) Wipe() {
	for _, k := range pk.DCF {
		wipeKey(k)
	}
	clear(pk.Fields)
}

func wipeKey(k *Key) {
	k.Root = Block{}
	clear(k.CW)
	clear(k.G)
	clear(k.V)
}
