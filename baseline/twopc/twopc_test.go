package twopc

import (
	"bytes"
	"context"
	"io"
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/netshape"
	"github.com/kord-fss/kord/internal/prg"
)

func newPair(t testing.TB) *Pair {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pr, err := NewPair(ctx, netshape.Profile{Name: "loopback"}, [2]io.Reader{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close() })
	return pr
}

// genChecked splits α and β into random additive shares, runs both
// parties and checks the pair with fss.CheckPair at the points given plus
// α, α ± 1, 0 and 2^ℓ − 1.
func genChecked(t *testing.T, pr *Pair, rng *mrand.Rand, p fss.Params, alpha, beta uint64, xs ...uint64) [2]Counters {
	t.Helper()
	ma, mb := prg.Mask(p.InBits), prg.Mask(p.OutBits)
	a0, b0 := rng.Uint64()&ma, rng.Uint64()&mb
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keys, cost, err := pr.Gen(ctx, p, [2]uint64{a0, (alpha - a0) & ma}, [2]uint64{b0, (beta - b0) & mb})
	if err != nil {
		t.Fatalf("%v α=%d: %v", p, alpha, err)
	}
	xs = append(xs, alpha, (alpha+1)&ma, (alpha-1)&ma, 0, ma, rng.Uint64()&ma)
	if err := fss.CheckPair(keys[0], keys[1], alpha, beta, xs...); err != nil {
		t.Fatal(err)
	}
	return cost
}

// TestExhaustiveSmall: every x of every small domain, both types, several
// output widths, α at the edges and in between.
func TestExhaustiveSmall(t *testing.T) {
	pr := newPair(t)
	rng := mrand.New(mrand.NewPCG(5, 6))
	for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
		for _, l := range []int{1, 2, 3, 5, 8} {
			for _, n := range []int{1, 7, 64} {
				p := fss.Params{Type: typ, InBits: l, OutBits: n}
				all := make([]uint64, 1<<l)
				for x := range all {
					all[x] = uint64(x)
				}
				for _, alpha := range []uint64{0, prg.Mask(l), rng.Uint64() & prg.Mask(l)} {
					beta := rng.Uint64() & prg.Mask(n)
					genChecked(t, pr, rng, p, alpha, beta, all...)
				}
			}
		}
	}
}

// TestWider: random points at wider domains, and the exchange count and
// per-level shape of the protocol as documented.
func TestWider(t *testing.T) {
	pr := newPair(t)
	rng := mrand.New(mrand.NewPCG(7, 8))
	for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
		for _, l := range []int{12, 16} {
			p := fss.Params{Type: typ, InBits: l, OutBits: 32}
			cost := genChecked(t, pr, rng, p, rng.Uint64()&prg.Mask(l), rng.Uint64()&prg.Mask(32))
			for b := range 2 {
				if cost[b].Rounds != ExchangesPerKey(p) {
					t.Fatalf("%v party %d: %d exchanges, ExchangesPerKey says %d", p, b, cost[b].Rounds, ExchangesPerKey(p))
				}
				if want := BytesPerKey(p, b); cost[b].Bytes != want {
					t.Fatalf("%v party %d: %d bytes, BytesPerKey says %d", p, b, cost[b].Bytes, want)
				}
			}
		}
	}
}

func TestBadInput(t *testing.T) {
	pr := newPair(t)
	ctx := context.Background()
	for _, tc := range []struct {
		p    fss.Params
		a, b uint64
	}{
		{fss.Params{Type: 9, InBits: 8, OutBits: 8}, 0, 0},
		{fss.Params{Type: fss.DPF, InBits: 0, OutBits: 8}, 0, 0},
		{fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}, 256, 0},
		{fss.Params{Type: fss.DCF, InBits: 8, OutBits: 4}, 0, 16},
	} {
		if _, _, err := pr.S[0].Gen(ctx, tc.p, tc.a, tc.b); err == nil {
			t.Fatalf("%v α=%d β=%d accepted", tc.p, tc.a, tc.b)
		}
	}
	// The session is still usable: nothing was sent.
	genChecked(t, pr, mrand.New(mrand.NewPCG(9, 9)), fss.Params{Type: fss.DPF, InBits: 4, OutBits: 4}, 3, 5)
}

// TestBitExactWithDealer: the distributed keys are byte for byte the
// dealer's keys (fss.GenWithRoots) for the same α, β and the roots the
// parties drew: the protocol computes exactly kord-v1's correction words.
func TestBitExactWithDealer(t *testing.T) {
	pr := newPair(t)
	rng := mrand.New(mrand.NewPCG(11, 12))
	ctx := context.Background()
	for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
		for _, sh := range [][2]int{{1, 1}, {2, 64}, {7, 13}, {10, 32}, {14, 64}} {
			p := fss.Params{Type: typ, InBits: sh[0], OutBits: sh[1]}
			ma, mb := prg.Mask(p.InBits), prg.Mask(p.OutBits)
			alpha, beta := rng.Uint64()&ma, rng.Uint64()&mb
			a0, b0 := rng.Uint64()&ma, rng.Uint64()&mb
			keys, _, err := pr.Gen(ctx, p, [2]uint64{a0, (alpha - a0) & ma}, [2]uint64{b0, (beta - b0) & mb})
			if err != nil {
				t.Fatal(err)
			}
			var got [2][]byte
			var roots [2][16]byte
			for b := range 2 {
				if got[b], err = keys[b].MarshalBinary(); err != nil {
					t.Fatal(err)
				}
				copy(roots[b][:], got[b][6:22])
			}
			d0, d1, err := fss.GenWithRoots(p, alpha, beta, roots[0], roots[1])
			if err != nil {
				t.Fatal(err)
			}
			for b, d := range []*fss.Key{d0, d1} {
				want, err := d.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got[b], want) {
					t.Fatalf("%v α=%d β=%d: party %d's key differs from the dealer's for the same roots", p, alpha, beta, b)
				}
			}
		}
	}
}

// TestGenBatch: n keys in lockstep take the exchanges of one key and the
// bytes of n, and every pair is correct; single keys still work after.
func TestGenBatch(t *testing.T) {
	pr := newPair(t)
	rng := mrand.New(mrand.NewPCG(15, 16))
	ctx := context.Background()
	for _, tc := range []struct {
		p fss.Params
		n int
	}{{fss.Params{Type: fss.DPF, InBits: 9, OutBits: 16}, 5}, {fss.Params{Type: fss.DCF, InBits: 7, OutBits: 64}, 3},
		{fss.Params{Type: fss.DCF, InBits: 1, OutBits: 1}, 2}, {fss.Params{Type: fss.DPF, InBits: 6, OutBits: 8}, 1}} {
		p := tc.p
		ma, mb := prg.Mask(p.InBits), prg.Mask(p.OutBits)
		alpha, beta := make([]uint64, tc.n), make([]uint64, tc.n)
		var as, bs [2][]uint64
		for i := range tc.n {
			alpha[i], beta[i] = rng.Uint64()&ma, rng.Uint64()&mb
			a0, b0 := rng.Uint64()&ma, rng.Uint64()&mb
			as[0], as[1] = append(as[0], a0), append(as[1], (alpha[i]-a0)&ma)
			bs[0], bs[1] = append(bs[0], b0), append(bs[1], (beta[i]-b0)&mb)
		}
		keys, cost, err := pr.GenBatch(ctx, p, as, bs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range tc.n {
			if err := fss.CheckPair(keys[0][i], keys[1][i], alpha[i], beta[i], alpha[i], (alpha[i]+1)&ma, (alpha[i]-1)&ma, 0, ma); err != nil {
				t.Fatalf("%v key %d of %d: %v", p, i, tc.n, err)
			}
		}
		for b := range 2 {
			if cost[b].Rounds != ExchangesPerKey(p) || cost[b].Bytes != uint64(tc.n)*BytesPerKey(p, b) {
				t.Fatalf("%v ×%d party %d: %+v, want %d exchanges and %d bytes", p, tc.n, b, cost[b], ExchangesPerKey(p), uint64(tc.n)*BytesPerKey(p, b))
			}
		}
	}
	genChecked(t, pr, rng, fss.Params{Type: fss.DCF, InBits: 5, OutBits: 5}, 17, 3)
	if _, _, err := pr.S[0].GenBatch(ctx, fss.Params{Type: fss.DPF, InBits: 4, OutBits: 4}, nil, nil); err == nil {
		t.Fatal("an empty batch was accepted")
	}
}
