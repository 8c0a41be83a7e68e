package infer

import (
	"errors"
	"fmt"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/gates"
)

// ReLU with derived keys only (zero offline bytes between the sites).
//
// gates.ReLU needs d·r, the DReLU bit times the opening's own mask, which
// it reads off a second DCF bound at the same α with payload β = r: one
// bound key, 2·⌈ℓ/8⌉ bytes per ReLU on the module link. Here both keys are
// derived, each at its own random mask, and the product is taken with the
// payload as the mask instead:
//
//   - F: derived DCF(ℓ→ℓ) at r1, β = 1;
//   - G: derived DCF(ℓ→ℓ) at r2, β = s drawn in the modules (DeriveBeta).
//
// Online, one round opens x̂1 = x + r1, x̂2 = x + r2 and x̂3 = x + s. With
// c = 2^{ℓ−1} (x ≥ 0 ⇔ x < c unsigned) and the comparison identity of
// docs/gates.md, d = F(x̂1−c) − F(x̂1) + 1{x̂1<c}·[1] is DReLU(x) and
// d·s = G(x̂2−c) − G(x̂2) + 1{x̂2<c}·[s]; then ReLU(x) = d·x = x̂3·d − d·s,
// local. The three masks are independent and uniform, so the three
// openings are jointly uniform and say nothing about x (they reveal the
// masks' differences, which are independent of everything else). Cost:
// three ℓ-bit openings instead of one, against one bound key fewer.
type reluMat struct {
	f, g      []*fss.Key
	r1, r2, s []uint64 // this party's shares
	used      bool
}

func (m *reluMat) wipe() {
	if m == nil {
		return
	}
	for _, k := range append(m.f, m.g...) {
		if k != nil {
			k.Wipe()
		}
	}
	clear(m.r1)
	clear(m.r2)
	clear(m.s)
}

// derivedN asks the source for n derived key pairs, batched when it can.
func derivedN(src gates.KeySource, p fss.Params, n int, wantBeta bool) (k [2][]*fss.Key, as, bs [2][]uint64, err error) {
	if n == 0 {
		return
	}
	if b, ok := src.(gates.BatchSource); ok {
		return b.DerivedBatch(p, n, wantBeta)
	}
	for b := 0; b < 2; b++ {
		k[b], as[b], bs[b] = make([]*fss.Key, n), make([]uint64, n), make([]uint64, n)
	}
	for i := 0; i < n; i++ {
		kk, a, bt, err := src.Derived(p, wantBeta)
		if err != nil {
			return k, as, bs, err
		}
		for b := 0; b < 2; b++ {
			k[b][i], as[b][i], bs[b][i] = kk[b], a[b], bt[b]
		}
	}
	return k, as, bs, nil
}

// derivedAsk is one batch of a derivedMany call: n derived key pairs of
// shape p (β drawn when wantBeta, else 1).
type derivedAsk struct {
	p        fss.Params
	n        int
	wantBeta bool
}

// derivedKeys is the answer to one derivedAsk: both parties' keys and
// their α and β shares.
type derivedKeys struct {
	k      [2][]*fss.Key
	as, bs [2][]uint64
}

func (d *derivedKeys) wipe() {
	for b := 0; b < 2; b++ {
		for _, k := range d.k[b] {
			if k != nil {
				k.Wipe()
			}
		}
		clear(d.as[b])
		clear(d.bs[b])
	}
}

// multiSource is a key source that answers several derived batches in one
// exchange (DaemonSource: one round trip to the daemons for both of a
// step's kinds of keys instead of one each).
type multiSource interface {
	derivedBatches(asks []derivedAsk) ([]derivedKeys, error)
}

// derivedMany asks the source for the batches asks, in that order: in one
// exchange when it can, else one derivedN each. On an error the batches
// already drawn are wiped.
func derivedMany(src gates.KeySource, asks ...derivedAsk) ([]derivedKeys, error) {
	if m, ok := src.(multiSource); ok {
		return m.derivedBatches(asks)
	}
	out := make([]derivedKeys, len(asks))
	for i, a := range asks {
		k, as, bs, err := derivedN(src, a.p, a.n, a.wantBeta)
		if err != nil {
			for j := range out[:i] {
				out[j].wipe()
			}
			return nil, err
		}
		out[i] = derivedKeys{k, as, bs}
	}
	return out, nil
}

// reluGen makes both parties' material for n ReLUs over Z_{2^ring}.
func reluGen(src gates.KeySource, ring, n int) ([2]*reluMat, error) {
	var out [2]*reluMat
	p := fss.Params{Type: fss.DCF, InBits: ring, OutBits: ring}
	ks, err := derivedMany(src, derivedAsk{p, n, false}, derivedAsk{p, n, true})
	if err != nil {
		return out, err
	}
	fk, fa := ks[0].k, ks[0].as
	gk, ga, gb := ks[1].k, ks[1].as, ks[1].bs
	for b := 0; b < 2; b++ {
		if len(fk[b]) != n || len(gk[b]) != n {
			return out, errors.New("key source returned the wrong number of keys")
		}
		out[b] = &reluMat{f: fk[b], g: gk[b], r1: fa[b], r2: ga[b], s: gb[b]}
	}
	return out, nil
}

// dcfCmp is party b's share of β·1{x < c} from x̂ = x + α (the DCF's α)
// and its share betaB of β: F(x̂−c) − F(x̂) + 1{x̂ < c}·β_b. One key at a
// time; the layers use dcfCmpBatch.
func dcfCmp(k *fss.Key, bits int, xhat, c, betaB uint64) (uint64, error) {
	m := mask(bits)
	u, err := k.Eval((xhat - c) & m)
	if err != nil {
		return 0, err
	}
	v, err := k.Eval(xhat & m)
	if err != nil {
		return 0, err
	}
	y := u - v
	if xhat&m < c {
		y += betaB
	}
	return y, nil
}

// dcfCmpBatch is dcfCmp for n keys of one shape at once, key i at
// xhat[i] with β share beta(i), through fss.BatchEval (the keys walk
// their paths together, about twice the rate of one Eval at a time;
// TestLayers and TestTruncExhaustive check it against the cleartext).
func dcfCmpBatch(keys []*fss.Key, bits int, xhat []uint64, c uint64, beta func(i int) uint64) ([]uint64, error) {
	n := len(keys)
	if n == 0 {
		return nil, nil
	}
	if len(xhat) != n || keys[0] == nil {
		return nil, errors.New("comparison keys and points differ in number")
	}
	be, err := fss.NewBatchEval(keys[0].Params())
	if err != nil {
		return nil, err
	}
	m := mask(bits)
	pts, u, v := make([]uint64, n), make([]uint64, n), make([]uint64, n)
	for i, x := range xhat {
		pts[i] = (x - c) & m
	}
	if err := be.Eval(keys, pts, u); err != nil {
		return nil, err
	}
	for i, x := range xhat {
		pts[i] = x & m
	}
	if err := be.Eval(keys, pts, v); err != nil {
		return nil, err
	}
	for i, x := range xhat {
		u[i] -= v[i]
		if x&m < c {
			u[i] += beta(i)
		}
	}
	return u, nil
}

// reluEval is party p's online ReLU on shares x (one round).
func reluEval(p *gates.Party, ring int, m *reluMat, x []uint64) ([]uint64, error) {
	n := len(x)
	if m == nil || m.used || len(m.f) != n || len(m.g) != n || len(m.r1) != n || len(m.r2) != n || len(m.s) != n {
		return nil, errors.New("ReLU material missing, used or of the wrong size")
	}
	m.used = true
	defer m.wipe()
	mk := mask(ring)
	send := make([]uint64, 3*n)
	for i, v := range x {
		send[i] = (v + m.r1[i]) & mk
		send[n+i] = (v + m.r2[i]) & mk
		send[2*n+i] = (v + m.s[i]) & mk
	}
	got, err := exchange(p, send, ring)
	if err != nil {
		return nil, err
	}
	half := uint64(1) << uint(ring-1)
	one := uint64(0)
	if p.B == 0 {
		one = 1
	}
	x1, x2 := make([]uint64, n), make([]uint64, n)
	for i := range x {
		x1[i], x2[i] = (send[i]+got[i])&mk, (send[n+i]+got[n+i])&mk
	}
	d, err := dcfCmpBatch(m.f, ring, x1, half, func(int) uint64 { return one })
	if err != nil {
		return nil, fmt.Errorf("ReLU keys: %w", err)
	}
	ds, err := dcfCmpBatch(m.g, ring, x2, half, func(i int) uint64 { return m.s[i] })
	if err != nil {
		return nil, fmt.Errorf("ReLU keys: %w", err)
	}
	out := make([]uint64, n)
	for i := range x {
		x3 := (send[2*n+i] + got[2*n+i]) & mk
		out[i] = (x3*d[i] - ds[i]) & mk
	}
	return out, nil
}
