package llama

import (
	"encoding/binary"
	"fmt"
)

// genReference is the generator written as the spec reads, one key at a
// time with ordinary branches: the test oracle for GenBatch (which Gen and
// GenKeys use), not a second production path.
func genReference(p Params, alpha uint64, beta []uint64, root0, root1 Block) (k0, k1 *Key, err error) {
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	if alpha&^mask(p.InBits) != 0 {
		return nil, nil, fmt.Errorf("%w: α = %d, Bin = %d", ErrAlpha, alpha, p.InBits)
	}
	if len(beta) != p.Group {
		return nil, nil, fmt.Errorf("%w: %d elements, group size %d", ErrPayload, len(beta), p.Group)
	}
	m := mask(p.OutBits)
	for i, b := range beta {
		if b&^m != 0 {
			return nil, nil, fmt.Errorf("%w: payload[%d] = %d is wider than Bout = %d", ErrValue, i, b, p.OutBits)
		}
	}
	if (root0[0]^root1[0])&1 != 1 {
		return nil, nil, ErrRoots
	}

	l, g := p.InBits, p.Group
	cw := make([]Block, l)
	v := make([]uint64, l*g)
	vAlpha := make([]uint64, g)
	lose0, lose1 := make([]uint64, g), make([]uint64, g)
	keep0, keep1 := make([]uint64, g), make([]uint64, g)
	cv := newConverter(p)
	s := [2]Block{root0, root1}

	for i := 0; i < l; i++ {
		keep := byte(alpha>>uint(l-1-i)) & 1
		lose := 1 - keep
		var ex [2][4]Block // per party: sL, sR, vL, vR
		var t [2]byte
		for b := 0; b < 2; b++ {
			t[b] = s[b][0] & 1
			c, err := newCipher(aesKey(s[b]))
			if err != nil {
				return nil, nil, err
			}
			for j := range ex[b] {
				ex[b][j] = counterBlock(c, uint64(j))
			}
		}
		for _, step := range []struct {
			dst []uint64
			src Block
		}{
			{lose0, ex[0][ctrValL+lose]}, {lose1, ex[1][ctrValL+lose]},
			{keep0, ex[0][ctrValL+keep]}, {keep1, ex[1][ctrValL+keep]},
		} {
			if err := cv.convert(step.dst, step.src); err != nil {
				return nil, nil, err
			}
		}
		neg := t[1] == 1
		for e := 0; e < g; e++ {
			x := lose1[e] - lose0[e] - vAlpha[e]
			if keep == 1 {
				x += beta[e]
			}
			sx := x // σ·(…): the value correction
			if neg {
				sx = -x
			}
			sx &= m
			v[i*g+e] = sx
			// V_α += conv(vKeep0) − conv(vKeep1) + σ·v = … + σ²·x = … + x.
			vAlpha[e] = (vAlpha[e] + keep0[e] - keep1[e] + x) & m
		}
		tL := ex[0][ctrSeedL][0] ^ ex[1][ctrSeedL][0] ^ keep ^ 1
		tR := ex[0][ctrSeedR][0] ^ ex[1][ctrSeedR][0] ^ keep
		tL, tR = tL&1, tR&1
		scw := xorBlock(ex[0][ctrSeedL+lose], ex[1][ctrSeedL+lose])
		scw[0] &^= 3
		cw[i] = scw
		cw[i][0] |= tL<<1 | tR
		tKeep := tL
		if keep == 1 {
			tKeep = tR
		}
		for b := 0; b < 2; b++ {
			next := ex[b][ctrSeedL+keep]
			if t[b] == 1 {
				next = xorBlock(next, scw)
				next[0] ^= tKeep
			}
			s[b] = next
		}
	}

	fin0, fin1 := keep0, keep1 // reuse the scratch
	if err := cv.convert(fin0, aesKey(s[0])); err != nil {
		return nil, nil, err
	}
	if err := cv.convert(fin1, aesKey(s[1])); err != nil {
		return nil, nil, err
	}
	gv := make([]uint64, g)
	for e := range gv {
		x := fin1[e] - fin0[e] - vAlpha[e]
		if s[1][0]&1 == 1 {
			x = -x
		}
		gv[e] = x & m
	}
	k0 = &Key{P: p, Root: root0, CW: cw, G: gv, V: v}
	k1 = &Key{P: p, Root: root1, CW: cw, G: gv, V: v}
	return k0, k1, nil
}

func xorBlock(a, b Block) Block {
	le := binary.LittleEndian
	le.PutUint64(a[:8], le.Uint64(a[:8])^le.Uint64(b[:8]))
	le.PutUint64(a[8:], le.Uint64(a[8:])^le.Uint64(b[8:]))
	return a
}
