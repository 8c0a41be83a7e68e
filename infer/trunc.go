package infer

import (
	"errors"
	"fmt"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/gates"
)

// Exact arithmetic right shift by s in Z_{2^ℓ}, one round, two derived
// keys per value.
//
// Write y = x + 2^{ℓ−1} (unsigned, so x >> s = ⌊y/2^s⌋ − 2^{ℓ−s−1} for
// every signed x) with shares y_0 = x_0 + 2^{ℓ−1}, y_1 = x_1, read as
// integers in [0, 2^ℓ). Then y = y_0 + y_1 − 2^ℓ·w with w = 1{Y ≥ 2^ℓ} for
// the exact sum Y = y_0 + y_1 < 2^{ℓ+1}, and
//
//	⌊y/2^s⌋ = ⌊y_0/2^s⌋ + ⌊y_1/2^s⌋ + c − 2^{ℓ−s}·w,
//	c = 1{U ≥ 2^s},  U = (y_0 mod 2^s) + (y_1 mod 2^s) < 2^{s+1}.
//
// Both comparisons are public comparisons of exactly shared sums, opened
// together in one round under derived masks: U + ρ mod 2^{s+1} with a DCF
// ((s+1)→ℓ) at ρ, and Y + σ mod 2^{ℓ+1} with a DCF((ℓ+1)→s) at σ (w only
// matters mod 2^s, since it is multiplied by 2^{ℓ−s}). No integer lift of
// a mask is needed, so no dealer and no bound key; the result is exact for
// every x in the ring (ℓ ≤ 63). TestTruncExhaustive checks all of a 10-bit
// ring at every shift.
type truncMat struct {
	c, w     []*fss.Key
	rho, sig []uint64 // this party's shares
	used     bool
}

func (m *truncMat) wipe() {
	if m == nil {
		return
	}
	for _, k := range append(m.c, m.w...) {
		if k != nil {
			k.Wipe()
		}
	}
	clear(m.rho)
	clear(m.sig)
}

// truncGen makes both parties' material for n truncations by s.
func truncGen(src gates.KeySource, ring, s, n int) ([2]*truncMat, error) {
	var out [2]*truncMat
	if ring > 63 || s < 1 || s >= ring-1 {
		return out, fmt.Errorf("truncation by %d needs 1 ≤ s < ℓ−1 and ℓ ≤ 63 (ℓ = %d)", s, ring)
	}
	ks, err := derivedMany(src, derivedAsk{fss.Params{Type: fss.DCF, InBits: s + 1, OutBits: ring}, n, false},
		derivedAsk{fss.Params{Type: fss.DCF, InBits: ring + 1, OutBits: s}, n, false})
	if err != nil {
		return out, err
	}
	ck, ca := ks[0].k, ks[0].as
	wk, wa := ks[1].k, ks[1].as
	for b := 0; b < 2; b++ {
		if len(ck[b]) != n || len(wk[b]) != n {
			return out, errors.New("key source returned the wrong number of keys")
		}
		out[b] = &truncMat{c: ck[b], w: wk[b], rho: ca[b], sig: wa[b]}
	}
	return out, nil
}

// truncEval is party p's online truncation by s of shares x (one round).
func truncEval(p *gates.Party, ring, s int, m *truncMat, x []uint64) ([]uint64, error) {
	n := len(x)
	if m == nil || m.used || len(m.c) != n || len(m.w) != n || len(m.rho) != n || len(m.sig) != n {
		return nil, errors.New("truncation material missing, used or of the wrong size")
	}
	m.used = true
	defer m.wipe()
	mk := mask(ring)
	y := make([]uint64, n)
	u := make([]uint64, n)
	v := make([]uint64, n)
	for i, xi := range x {
		y[i] = xi & mk
		if p.B == 0 {
			y[i] = (y[i] + 1<<uint(ring-1)) & mk
		}
		u[i] = (y[i]&mask(s) + m.rho[i]) & mask(s+1)
		v[i] = (y[i] + m.sig[i]) & mask(ring+1)
	}
	// one frame: the s+1-bit and the ℓ+1-bit openings
	in, err := p.Conn.Exchange(append(pack(u, s+1), pack(v, ring+1)...))
	if err != nil {
		return nil, err
	}
	lu := packed(n, s+1)
	if len(in) != lu+packed(n, ring+1) {
		return nil, fmt.Errorf("malformed frame from peer: %d bytes, want %d", len(in), lu+packed(n, ring+1))
	}
	pu, err := unpack(in[:lu], n, s+1)
	if err != nil {
		return nil, err
	}
	pv, err := unpack(in[lu:], n, ring+1)
	if err != nil {
		return nil, err
	}
	one := uint64(0)
	if p.B == 0 {
		one = 1
	}
	uh, vh := make([]uint64, n), make([]uint64, n)
	for i := range x {
		uh[i] = (u[i] + pu[i]) & mask(s+1)
		vh[i] = (v[i] + pv[i]) & mask(ring+1)
	}
	// c = 1 − 1{U < 2^s}, w = 1 − 1{Y < 2^ℓ}
	ones := func(int) uint64 { return one }
	lc, err := dcfCmpBatch(m.c, s+1, uh, 1<<uint(s), ones)
	if err != nil {
		return nil, fmt.Errorf("truncation keys: %w", err)
	}
	lw, err := dcfCmpBatch(m.w, ring+1, vh, 1<<uint(ring), ones)
	if err != nil {
		return nil, fmt.Errorf("truncation keys: %w", err)
	}
	out := make([]uint64, n)
	for i := range x {
		c := one - lc[i]
		w := one - lw[i]
		r := y[i]>>uint(s) + c - w<<uint(ring-s)
		if p.B == 0 {
			r -= 1 << uint(ring-s-1)
		}
		out[i] = r & mk
	}
	return out, nil
}
