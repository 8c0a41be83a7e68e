package llama

import "fmt"

// gateMath is one pack's public-to-its-dealer content: each DCF's α and
// β, and each share field's value, all derived from the masks.
type gateMath struct {
	alpha  [2]uint64
	beta   [2][2]uint64 // up to two payload elements per DCF
	fields [6]uint64
}

// computeGate derives a pack's α, β and share-field values from its masks
// (gates.md). For ARS the non-linear fields — msb(−r_in) in β and sb1, and
// ((−r_in) mod 2^(Bits−1)) >> Shift in rb — are computed here, so whoever
// runs this sees the masks: a dealer, or one module of a pair.
func computeGate(g Gate, s *GateSecrets) (gm gateMath) {
	m := mask(g.Bits)
	switch g.Kind {
	case GateReLU, GateMaxPool:
		rin, rout := s.RIn[0]&m, s.ROut&m
		if g.Kind == GateMaxPool {
			rin, rout = (s.RIn[0]-s.RIn[1])&m, 0
		}
		gm.alpha[0] = (rin - 1) & m
		gm.beta[0] = [2]uint64{1, -rin & m}
		// e0, e1 are shares of β·cr where LLAMA's cr is 0 for every r_in.
		gm.fields = [6]uint64{0, 0, 1, -rin & m, rout}
		if g.Kind == GateMaxPool {
			gm.fields[5] = (s.ROut - s.RIn[1]) & m
		}
	case GateARS:
		y := -s.RIn[0] & m
		msb := y >> uint(g.Bits-1)
		an := y & mask(g.Bits-1)
		gm.alpha[0] = y & mask(g.Shift)
		gm.beta[0] = [2]uint64{1, 0}
		gm.alpha[1] = an
		gm.beta[1] = [2]uint64{1, (1 - 2*msb) & m}
		gm.fields = [6]uint64{0, msb, (s.ROut + an>>uint(g.Shift)) & m}
	}
	return gm
}

// checkSecrets reports the first secret of pack i that does not fit g.
func checkSecrets(g Gate, i int, s *GateSecrets) error {
	m := mask(g.Bits)
	for j := 0; j < g.Masks(); j++ {
		if s.RIn[j]&^m != 0 {
			return gateErr("pack %d: r_in[%d] does not fit in %d bits", i, j, g.Bits)
		}
	}
	if g.Masks() == 1 && s.RIn[1] != 0 {
		return gateErr("pack %d: r_in[1] given for a %v gate, which has one input", i, g.Kind)
	}
	if s.ROut&^m != 0 {
		return gateErr("pack %d: r_out does not fit in %d bits", i, g.Bits)
	}
	for d := range g.DCFs() {
		if (s.Roots[d][0][0]^s.Roots[d][1][0])&1 != 1 {
			return gateErr("pack %d: DCF %d: %v", i, d, ErrRoots)
		}
	}
	for f := 0; f < 6; f++ {
		if f >= g.ShareFields() && s.Split[f] != 0 {
			return gateErr("pack %d: split[%d] given, a %v pack has %d share fields", i, f, g.Kind, g.ShareFields())
		}
		if s.Split[f]&^m != 0 {
			return gateErr("pack %d: split[%d] does not fit in %d bits", i, f, g.Bits)
		}
	}
	return nil
}

// GenGates writes the packs of len(sec) gates of shape g end to end, as
// LLAMA's dealer (keyGenRelu, keyGenARS, keyGenMaxpool and its
// send_*_key) would with the same masks, DCF roots and share draws:
// party 0's (server.dat) into out0 and party 1's (client.dat) into out1,
// each len(sec)·g.PackSize() bytes. It is kord's in-process dealer.
func GenGates(g Gate, sec []GateSecrets, out0, out1 []byte) error {
	if err := GenGatesParty(g, 0, sec, out0); err != nil {
		return err
	}
	return GenGatesParty(g, 1, sec, out1)
}

// GenGatesParty is GenGates writing only party's packs into out: the same
// bytes as that half of GenGates. It is what a key-generation module
// runs, since it hands out only its own party's packs.
func GenGatesParty(g Gate, party int, sec []GateSecrets, out []byte) error {
	if err := g.Validate(); err != nil {
		return err
	}
	if party != 0 && party != 1 {
		return fmt.Errorf("%w: %d", ErrParty, party)
	}
	n, size := len(sec), g.PackSize()
	if len(out) != n*size {
		return gateErr("output of %d bytes for %d packs of %d bytes (%v)", len(out), n, size, g)
	}
	for i := range sec {
		if err := checkSecrets(g, i, &sec[i]); err != nil {
			return err
		}
	}
	dcfs := g.DCFs()
	ms := make([]gateMath, n)
	defer clear(ms)
	off := 0
	for d, p := range dcfs {
		alpha := make([]uint64, n)
		beta := make([]uint64, n*p.Group)
		r0, r1 := make([]Block, n), make([]Block, n)
		for i := range sec {
			if d == 0 {
				ms[i] = computeGate(g, &sec[i])
			}
			alpha[i] = ms[i].alpha[d]
			copy(beta[i*p.Group:], ms[i].beta[d][:p.Group])
			r0[i], r1[i] = sec[i].Roots[d][0], sec[i].Roots[d][1]
		}
		ks := p.KeySize()
		keys := make([]byte, n*ks)
		err := GenBatchParty(p, party, alpha, beta, r0, r1, keys)
		if err == nil {
			for i := range n {
				copy(out[i*size+off:], keys[i*ks:(i+1)*ks])
			}
		}
		clear(alpha)
		clear(beta)
		clear(r0)
		clear(r1)
		clear(keys)
		if err != nil {
			return err
		}
		off += ks
	}
	e, m := ElemBytes(g.Bits), mask(g.Bits)
	for i := range sec {
		at := i*size + off
		for f := 0; f < g.ShareFields(); f++ {
			v := sec[i].Split[f]
			if party == 1 {
				v = (ms[i].fields[f] - v) & m
			}
			putElem(out[at+f*e:], v, e)
		}
	}
	return nil
}
