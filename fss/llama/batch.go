package llama

import (
	"encoding/binary"
	"fmt"
)

// BatchKeys is how many keys GenBatch walks down the tree together: at each
// level the 2·BatchKeys node seeds of both parties are expanded in one call
// (expandNodes), which is where a kernel that expands many AES key
// schedules side by side plugs in.
const BatchKeys = 64

// GenBatch generates n = len(alpha) keys of shape p into out0 and out1,
// each n·p.KeySize() bytes: key j of party b at out_b[j·KeySize:], so out0
// and out1 are exactly LLAMA's server.dat and client.dat for n DCF gates of
// this shape. beta holds n·Group payload elements (key j's at
// beta[j·Group:]); root0 and root1 one root block per key.
//
// LLAMA's PRG is AES keyed by the node seed, so every node costs an AES key
// expansion besides its four encryptions; kord-v1 hashes under four fixed
// keys expanded once (MMO) and pays only the encryptions. On amd64 with
// AES-NI the expansion runs on the fly inside the encryption kernel
// (rekey_amd64.s); the pure-Go path (other architectures, purego) calls
// crypto/aes.NewCipher per node, one allocation each. BENCHMARKS.md has
// what the re-keying costs against kord-v1's BatchGen.
func GenBatch(p Params, alpha, beta []uint64, root0, root1 []Block, out0, out1 []byte) error {
	if err := p.Validate(); err != nil {
		return err
	}
	n, size := len(alpha), p.KeySize()
	if len(out0) != n*size || len(out1) != n*size {
		return fmt.Errorf("%w: outputs of %d and %d bytes for %d keys of %d bytes", ErrLength, len(out0), len(out1), n, size)
	}
	return genBatch(p, alpha, beta, root0, root1, out0, out1)
}

// GenBatchParty is GenBatch writing only party's keys (0 = server.dat,
// 1 = client.dat) into out, n·p.KeySize() bytes: the same bytes as that
// half of GenBatch's output. It is what a key-generation module runs,
// since it hands out only its own party's share.
func GenBatchParty(p Params, party int, alpha, beta []uint64, root0, root1 []Block, out []byte) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if party != 0 && party != 1 {
		return fmt.Errorf("%w: %d", ErrParty, party)
	}
	n, size := len(alpha), p.KeySize()
	if len(out) != n*size {
		return fmt.Errorf("%w: output of %d bytes for %d keys of %d bytes", ErrLength, len(out), n, size)
	}
	if err := genBatch(p, alpha, beta, root0, root1, out, nil); err != nil {
		return err
	}
	if party == 1 {
		// The two keys of a pair differ only in their root block.
		for j := range root1 {
			copy(out[j*size:], root1[j][:])
		}
	}
	return nil
}

// genBatch checks the inputs and generates: the keys' shared body and
// party 0's roots into out0, and, when out1 is not nil, party 1's copy.
func genBatch(p Params, alpha, beta []uint64, root0, root1 []Block, out0, out1 []byte) error {
	n := len(alpha)
	size := p.KeySize()
	switch {
	case len(beta) != n*p.Group:
		return fmt.Errorf("%w: %d payload elements for %d keys of group %d", ErrPayload, len(beta), n, p.Group)
	case len(root0) != n || len(root1) != n:
		return fmt.Errorf("llama: %d keys but %d and %d root blocks", n, len(root0), len(root1))
	}
	m := mask(p.OutBits)
	for j, a := range alpha {
		if a&^mask(p.InBits) != 0 {
			return fmt.Errorf("key %d: %w: α = %d, Bin = %d", j, ErrAlpha, a, p.InBits)
		}
		if (root0[j][0]^root1[j][0])&1 != 1 {
			return fmt.Errorf("key %d: %w", j, ErrRoots)
		}
	}
	for i, b := range beta {
		if b&^m != 0 {
			return fmt.Errorf("key %d: %w: payload[%d] = %d is wider than Bout = %d", i/p.Group, ErrValue, i%p.Group, b, p.OutBits)
		}
	}
	st := newBatchState(p, min(n, BatchKeys))
	for lo := 0; lo < n; lo += BatchKeys {
		hi := min(n, lo+BatchKeys)
		if err := st.gen(alpha[lo:hi], beta[lo*p.Group:hi*p.Group], root0[lo:hi], root1[lo:hi], out0[lo*size:hi*size]); err != nil {
			return fmt.Errorf("keys %d..%d: %w", lo, hi-1, err)
		}
	}
	if out1 != nil {
		// The two keys of a pair differ only in their root block.
		copy(out1, out0)
		for j := range root1 {
			copy(out1[j*size:], root1[j][:])
		}
	}
	return nil
}

// batchState is the scratch of up to cap keys walking the tree together.
type batchState struct {
	p      Params
	cv     *converter
	seeds  []Block    // 2 per key: party 0, party 1
	ex     [][4]Block // expansions of seeds: sL, sR, vL, vR
	vAlpha []uint64   // Group per key
	conv   [4][]uint64
	// direct: group 1, so convert reads the element straight from the
	// block's low eight bytes (no AES stream): gen does it inline.
	direct bool
}

func newBatchState(p Params, capKeys int) *batchState {
	st := &batchState{
		p:      p,
		cv:     newConverter(p),
		seeds:  make([]Block, 2*capKeys),
		ex:     make([][4]Block, 2*capKeys),
		vAlpha: make([]uint64, capKeys*p.Group),
	}
	st.direct = p.Group == 1 && st.cv.stream == nil
	for i := range st.conv {
		st.conv[i] = make([]uint64, p.Group)
	}
	return st
}

// expandNodes sets ex[i] to the four PRG outputs of node seeds[i]. Each node
// has its own AES key (the seed with bits 0,1 cleared), so this is
// len(seeds) key expansions and 4·len(seeds) encryptions.
func expandNodes(ex [][4]Block, seeds []Block) error {
	if kernelExpand(ex, seeds) {
		return nil
	}
	return expandNodesGeneric(ex, seeds)
}

// expandNodesGeneric is expandNodes on crypto/aes: one NewCipher (key
// schedule and an allocation) per node.
func expandNodesGeneric(ex [][4]Block, seeds []Block) error {
	for i := range seeds {
		c, err := newCipher(aesKey(seeds[i]))
		if err != nil {
			return err
		}
		for j := range ex[i] {
			ex[i][j] = counterBlock(c, uint64(j))
		}
	}
	return nil
}

// putElem writes the low e bytes (1, 2, 4 or 8) of v little-endian.
func putElem(dst []byte, v uint64, e int) {
	le := binary.LittleEndian
	switch e {
	case 8:
		le.PutUint64(dst, v)
	case 4:
		le.PutUint32(dst, uint32(v))
	case 2:
		le.PutUint16(dst, uint16(v))
	default:
		dst[0] = byte(v)
	}
}

// gen generates the keys of one batch into out: party 0's key files (the
// body both parties share, under party 0's roots).
func (st *batchState) gen(alpha, beta []uint64, root0, root1 []Block, out []byte) error {
	p := st.p
	n, l, g := len(alpha), p.InBits, p.Group
	m := mask(p.OutBits)
	e := ElemBytes(p.OutBits)
	size := p.KeySize()
	gOff := 16 * (l + 1)
	vOff := gOff + e*g
	seeds, ex := st.seeds[:2*n], st.ex[:2*n]
	vAlpha := st.vAlpha[:n*g]
	clear(vAlpha)
	lose0, lose1, keep0, keep1 := st.conv[0], st.conv[1], st.conv[2], st.conv[3]
	for j := 0; j < n; j++ {
		seeds[2*j], seeds[2*j+1] = root0[j], root1[j]
		copy(out[j*size:], root0[j][:])
	}
	for i := 0; i < l; i++ {
		if err := expandNodes(ex, seeds); err != nil {
			return err
		}
		for j := 0; j < n; j++ {
			// Branch-free in the secrets (α's bits, control bits, signs):
			// sides are picked with masks, not indices or ifs.
			x0, x1 := &ex[2*j], &ex[2*j+1]
			t0, t1 := uint64(seeds[2*j][0]&1), uint64(seeds[2*j+1][0]&1)
			keep := alpha[j] >> uint(l-1-i) & 1
			km := -keep // all ones iff the path goes right
			k0 := out[j*size : (j+1)*size]
			// v_lose and v_keep of each party: right/left picked by km.
			if st.direct {
				// One element in the low eight bytes of a value block:
				// LLAMA's convert is a masked load, done here inline, and
				// the level's value correction with it.
				le := binary.LittleEndian
				l0, r0 := le.Uint64(x0[ctrValL][:8]), le.Uint64(x0[ctrValR][:8])
				l1, r1 := le.Uint64(x1[ctrValL][:8]), le.Uint64(x1[ctrValR][:8])
				lose0, keep0 := r0^(r0^l0)&km, l0^(l0^r0)&km
				lose1, keep1 := r1^(r1^l1)&km, l1^(l1^r1)&km
				va := vAlpha[j]
				x := lose1 - lose0 - va + beta[j]&km
				putElem(k0[vOff+e*i:], (x^-t1+t1)&m, e) // σ·x, σ = −1 iff t1
				vAlpha[j] = (va + keep0 - keep1 + x) & m
			} else {
				if err := st.convSel(lose0, &x0[ctrValR], &x0[ctrValL], km); err != nil {
					return err
				}
				if err := st.convSel(lose1, &x1[ctrValR], &x1[ctrValL], km); err != nil {
					return err
				}
				if err := st.convSel(keep0, &x0[ctrValL], &x0[ctrValR], km); err != nil {
					return err
				}
				if err := st.convSel(keep1, &x1[ctrValL], &x1[ctrValR], km); err != nil {
					return err
				}
				va := vAlpha[j*g : (j+1)*g]
				bj := beta[j*g : (j+1)*g]
				for el := range va {
					x := lose1[el] - lose0[el] - va[el] + bj[el]&km
					v := (x ^ -t1 + t1) & m // σ·x, σ = −1 iff t1
					at := vOff + e*(i*g+el)
					putElem(k0[at:], v, e)
					// V_α += conv(vKeep0) − conv(vKeep1) + σ·v, and σ·v = x.
					va[el] = (va[el] + keep0[el] - keep1[el] + x) & m
				}
			}
			le := binary.LittleEndian
			sL0, sR0 := le.Uint64(x0[ctrSeedL][:8]), le.Uint64(x0[ctrSeedR][:8])
			sL1, sR1 := le.Uint64(x1[ctrSeedL][:8]), le.Uint64(x1[ctrSeedR][:8])
			hL0, hR0 := le.Uint64(x0[ctrSeedL][8:]), le.Uint64(x0[ctrSeedR][8:])
			hL1, hR1 := le.Uint64(x1[ctrSeedL][8:]), le.Uint64(x1[ctrSeedR][8:])
			tL := (sL0 ^ sL1 ^ keep ^ 1) & 1
			tR := (sR0 ^ sR1 ^ keep) & 1
			// seed correction = the lose side's seeds XORed, bits 0,1 cleared
			scwLo := (sR0 ^ sR1 ^ (sL0^sL1^sR0^sR1)&km) &^ 3
			scwHi := hR0 ^ hR1 ^ (hL0^hL1^hR0^hR1)&km
			le.PutUint64(k0[16*(i+1):], scwLo|tL<<1|tR)
			le.PutUint64(k0[16*(i+1)+8:], scwHi)
			tKeep := tL ^ (tL^tR)&keep
			// Each party's kept child, corrected where its t is set.
			cLo, tm0, tm1 := scwLo|tKeep, -t0, -t1
			n0, n1 := &seeds[2*j], &seeds[2*j+1]
			le.PutUint64(n0[:8], sL0^(sL0^sR0)&km^cLo&tm0)
			le.PutUint64(n0[8:], hL0^(hL0^hR0)&km^scwHi&tm0)
			le.PutUint64(n1[:8], sL1^(sL1^sR1)&km^cLo&tm1)
			le.PutUint64(n1[8:], hL1^(hL1^hR1)&km^scwHi&tm1)
		}
	}
	fin0, fin1 := keep0, keep1
	for j := 0; j < n; j++ {
		s0, s1 := seeds[2*j], seeds[2*j+1]
		if err := st.cv.convert(fin0, aesKey(s0)); err != nil {
			return err
		}
		if err := st.cv.convert(fin1, aesKey(s1)); err != nil {
			return err
		}
		k0 := out[j*size : (j+1)*size]
		t1 := uint64(s1[0] & 1)
		for el := 0; el < g; el++ {
			x := fin1[el] - fin0[el] - vAlpha[j*g+el]
			x = (x ^ -t1 + t1) & m // negated iff the final t1 is set
			putElem(k0[gOff+e*el:], x, e)
		}
	}
	return nil
}

// selBlock returns *a where m = 0 and *b where m = ^0, without a branch or
// a secret-dependent index.
func selBlock(a, b *Block, m uint64) (out Block) {
	le := binary.LittleEndian
	alo, ahi := le.Uint64(a[:8]), le.Uint64(a[8:])
	le.PutUint64(out[:8], alo^(alo^le.Uint64(b[:8]))&m)
	le.PutUint64(out[8:], ahi^(ahi^le.Uint64(b[8:]))&m)
	return out
}

// convSel converts *a where m = 0 and *b where m = ^0 into dst.
func (st *batchState) convSel(dst []uint64, a, b *Block, m uint64) error {
	return st.cv.convert(dst, selBlock(a, b, m))
}
