package ntru

import (
	"errors"
	"io"
	"sort"
)

// PublicKey is an NTRUEncrypt public key h = 3·g·f^-1 mod q.
type PublicKey struct {
	set     ParamSet
	p       *params
	h       []uint16 // coefficients mod q
	packedH []byte
	hImg    *laneImage // image of h (see mult.go)
	hNeg    *laneImage // image of −h
	hKron   []uint64   // h packed for ternaryMulKron
	hSum    uint16     // Σ h_i mod q
}

// PrivateKey is an NTRUEncrypt private key f = 1 + 3F with its public key.
type PrivateKey struct {
	pub    PublicKey
	fPlus  []uint16 // indices of F's +1 coefficients, ascending
	fMinus []uint16 // indices of F's −1 coefficients, ascending
	fTrits []uint8  // F as trits (0, 1, 2 = −1)
	fKron  []uint64 // F + 1 packed for ternaryMulKron
}

// Set returns the key's parameter set.
func (k *PublicKey) Set() ParamSet { return k.set }

// Set returns the key's parameter set.
func (k *PrivateKey) Set() ParamSet { return k.pub.set }

// Public returns the public half of the key.
func (k *PrivateKey) Public() *PublicKey { return &k.pub }

func newPublicKey(set ParamSet, p *params, h []uint16) *PublicKey {
	k := &PublicKey{set: set, p: p, h: h, packedH: packQ(h)}
	k.hImg = newLaneImage(h, false)
	k.hNeg = newLaneImage(h, true)
	k.hKron = make([]uint64, kronWords(p.n))
	packKron(k.hKron, h)
	k.hSum = sumMod(h)
	return k
}

func newPrivateKey(pub *PublicKey, plus, minus []uint16) *PrivateKey {
	k := &PrivateKey{pub: *pub, fPlus: plus, fMinus: minus}
	k.fTrits = make([]uint8, pub.p.n)
	for _, i := range plus {
		k.fTrits[i] = 1
	}
	for _, i := range minus {
		k.fTrits[i] = 2
	}
	k.fKron = make([]uint64, kronWords(pub.p.n))
	packKronTernary(k.fKron, k.fTrits)
	return k
}

// GenerateKey creates a key pair for set, drawing randomness from rand.
// F has df coefficients +1 and df −1; g has dg+1 coefficients +1 and dg −1.
// f = 1 + 3F must be invertible mod q and g invertible mod 2; otherwise
// fresh polynomials are drawn.
func GenerateKey(rand io.Reader, set ParamSet) (*PrivateKey, error) {
	p, err := set.params()
	if err != nil {
		return nil, err
	}
	for tries := 0; tries < 100; tries++ {
		fPlus, fMinus, err := randomTernary(rand, p.n, p.df, p.df)
		if err != nil {
			return nil, err
		}
		gPlus, gMinus, err := randomTernary(rand, p.n, p.dg+1, p.dg)
		if err != nil {
			return nil, err
		}
		k, ok := keyFromFG(set, p, fPlus, fMinus, gPlus, gMinus)
		if ok {
			return k, nil
		}
	}
	return nil, errors.New("ntru: key generation failed to find an invertible key")
}

// keyFromFG derives h = 3·g·f^-1 mod q from F and g given as index lists.
func keyFromFG(set ParamSet, p *params, fPlus, fMinus, gPlus, gMinus []uint16) (*PrivateKey, bool) {
	g := make([]uint16, p.n)
	for _, i := range gPlus {
		g[i] = 1
	}
	for _, i := range gMinus {
		g[i] = qMask
	}
	if _, ok := invertMod2(g); !ok {
		return nil, false
	}
	fq, ok := invertModQ(p.n, fPlus, fMinus)
	if !ok {
		return nil, false
	}
	h := make([]uint16, p.n)
	sparseMul(h, newLaneImage(fq, false), newLaneImage(fq, true), gPlus, gMinus)
	for i := range h {
		h[i] = (3 * h[i]) & qMask
	}
	pub := newPublicKey(set, p, h)
	return newPrivateKey(pub, sortedCopy(fPlus), sortedCopy(fMinus)), true
}

// randomTernary draws distinct random indices below n: nPlus for +1, then
// nMinus for −1. Indices come from 16-bit samples by rejection.
func randomTernary(rand io.Reader, n, nPlus, nMinus int) (plus, minus []uint16, err error) {
	used := make([]bool, n)
	limit := 65536 - 65536%n
	var buf [256]byte
	pos := len(buf)
	pick := func(count int) ([]uint16, error) {
		out := make([]uint16, 0, count)
		for len(out) < count {
			if pos+2 > len(buf) {
				if _, err := io.ReadFull(rand, buf[:]); err != nil {
					return nil, errors.New("ntru: reading randomness: " + err.Error())
				}
				pos = 0
			}
			v := int(buf[pos])<<8 | int(buf[pos+1])
			pos += 2
			if v >= limit || used[v%n] {
				continue
			}
			used[v%n] = true
			out = append(out, uint16(v%n))
		}
		return out, nil
	}
	if plus, err = pick(nPlus); err != nil {
		return nil, nil, err
	}
	if minus, err = pick(nMinus); err != nil {
		return nil, nil, err
	}
	return plus, minus, nil
}

func sortedCopy(v []uint16) []uint16 {
	out := append([]uint16(nil), v...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
