package infer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kord-fss/kord/gates"
)

// moduleSources returns keys from a freshly paired pair of software
// modules (host.LocalPair), for the non-linear layers' keys and the linear
// layers' derived correlations.
func moduleSources(t testing.TB) Sources {
	t.Helper()
	ks, err := gates.NewModuleSource(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ks.Close)
	return Sources{Keys: ks, Corr: &ModuleCorr{Pair: ks.Pair}}
}

// dealerGen draws the session and one evaluation's material of m from
// the trusted dealer (the tests' quick source).
func dealerGen(t testing.TB, m *Model) ([2]*Session, [2]*Material) {
	t.Helper()
	sp, sess, err := NewSupply(m, Sources{Keys: &gates.DealerSource{}, Corr: &DealerCorr{}})
	if err != nil {
		t.Fatal(err)
	}
	mat, err := sp.Gen()
	if err != nil {
		t.Fatal(err)
	}
	return sess, mat
}

// connPair is a loopback TCP pair of gates.Conn, closed at the test's end.
func connPair(t testing.TB) (c0, c1 *gates.Conn) {
	t.Helper()
	c0, c1, err := gates.TCPPair()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c0.Close(); c1.Close() })
	return c0, c1
}

func randVals(r *rand.Rand, n int, lim int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = r.Int64N(2*lim+1) - lim
	}
	return out
}

// withWeights fills every linear layer with random weights and biases
// bounded by wlim.
func withWeights(r *rand.Rand, m *Model, wlim int64) *Model {
	shapes, err := m.Shapes()
	if err != nil {
		panic(err)
	}
	_ = shapes
	for i := range m.Layers {
		l := &m.Layers[i]
		if l.Linear() {
			l.W = randVals(r, l.weightLen(), wlim)
			l.B = randVals(r, l.Out, wlim)
		}
	}
	return m
}

// TestLayers runs each layer protocol alone at several ring widths, keys
// from a paired module pair, and requires the client's output to equal
// the cleartext reference on every value (inputs cover both signs, zero
// and ties for max-pool).
func TestLayers(t *testing.T) {
	src := moduleSources(t)
	r := rand.New(rand.NewPCG(1, 2))
	for _, ring := range []int{16, 32, 41, 64} {
		in := Shape{2, 6, 6}
		lim := int64(1) << uint(min(ring/2-2, 20))
		cases := []struct {
			name   string
			layers []Layer
		}{
			{"fc", []Layer{{Kind: Flatten}, {Kind: FC, In: 72, Out: 5}}},
			{"conv", []Layer{{Kind: Conv, In: 2, Out: 3, K: 3}}},
			{"relu", []Layer{{Kind: ReLU}}},
			{"maxpool2", []Layer{{Kind: MaxPool, K: 2}}},
			{"maxpool3", []Layer{{Kind: MaxPool, K: 3}}},
			{"trunc", []Layer{{Kind: Trunc, S: 5}}},
			{"trunc1", []Layer{{Kind: Trunc, S: 1}}},
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/l=%d", c.name, ring), func(t *testing.T) {
				m := withWeights(r, &Model{Name: c.name, Ring: ring, Frac: 2, Input: in, Layers: c.layers}, 1<<6)
				x := randVals(r, in.Len(), lim)
				x[0], x[1], x[2] = 0, -1, lim // edges: zero, −1 (truncates to −1), a tie below
				x[3] = lim
				if ring < 64 && strings.HasPrefix(c.name, "trunc") { // truncation is exact on the whole ring
					x[4], x[5] = int64(1)<<uint(ring-1)-1, -(int64(1) << uint(ring-1))
				}
				want, _, err := m.Ref(x)
				if err != nil {
					t.Fatal(err)
				}
				got, _, err := Run(m, x, src)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(want) {
					t.Fatalf("%d outputs, want %d", len(got), len(want))
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("output %d = %d, want %d", i, got[i], want[i])
					}
				}
			})
		}
	}
}

// TestTruncExhaustive checks the exact arithmetic shift on every value of
// a 10-bit ring for every shift, against x >> s.
func TestTruncExhaustive(t *testing.T) {
	src := moduleSources(t)
	const ring = 10
	for s := 1; s <= ring-2; s++ {
		m := &Model{Ring: ring, Frac: 0, Input: Shape{1 << ring, 1, 1}, Layers: []Layer{{Kind: Trunc, S: s}}}
		x := make([]int64, 1<<ring)
		for i := range x {
			x[i] = int64(i) - 1<<(ring-1)
		}
		got, _, err := Run(m, x, src)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range x {
			if got[i] != v>>uint(s) {
				t.Fatalf("s=%d: %d >> s = %d, want %d", s, v, got[i], v>>uint(s))
			}
		}
	}
}

// TestDealerKeys runs a small network with every key from the
// trusted-dealer baseline too: the protocol does not depend on the source.
func TestDealerKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	m := withWeights(r, &Model{Ring: 32, Frac: 4, Input: Shape{1, 8, 8}, Layers: []Layer{
		{Kind: Conv, In: 1, Out: 2, K: 3}, {Kind: MaxPool, K: 2}, {Kind: ReLU}, {Kind: Trunc, S: 4},
		{Kind: Flatten}, {Kind: FC, In: 18, Out: 4},
	}}, 40)
	x := randVals(r, 64, 1<<8)
	want, st, err := m.Ref(x)
	if err != nil || st.Overflow != 0 {
		t.Fatal(err, st)
	}
	got, _, err := Run(m, x, Sources{Keys: &gates.DealerSource{}, Corr: &DealerCorr{}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("output %d = %d, want %d", i, got[i], want[i])
		}
	}
}

// TestMaterialSingleUse: a second Eval on the same material fails before
// anything is sent; a session opens its weights once.
func TestMaterialSingleUse(t *testing.T) {
	m := &Model{Ring: 16, Frac: 2, Input: Shape{4, 1, 1}, Layers: []Layer{{Kind: ReLU}}}
	sess, mat := dealerGen(t, m)
	c0, c1 := connPair(t)
	if _, err := Online([2]*gates.Conn{c0, c1}, m, sess, mat, []int64{1, -2, 3, 0}); err != nil {
		t.Fatal(err)
	}
	sent := c1.Sent()
	if _, err := Eval(&gates.Party{B: 1, Conn: c1}, m, sess[1], mat[1], []int64{1, 2, 3, 4}); !errors.Is(err, ErrUsed) {
		t.Fatalf("second Eval: %v, want ErrUsed", err)
	}
	if c1.Sent() != sent {
		t.Fatal("second Eval sent bytes")
	}
	if err := sess[1].Open(&gates.Party{B: 1, Conn: c1}, m); err == nil || c1.Sent() != sent {
		t.Fatal("a session opened its weights twice")
	}
}

// TestOwnerWithoutWeights: an owner whose model lacks weights gets an
// error before anything is sent, not a panic.
func TestOwnerWithoutWeights(t *testing.T) {
	m := &Model{Ring: 16, Frac: 2, Input: Shape{3, 1, 1}, Layers: []Layer{{Kind: FC, In: 3, Out: 2}}}
	sess, _ := dealerGen(t, m)
	c0, _ := connPair(t)
	if err := sess[0].Open(&gates.Party{B: 0, Conn: c0}, m); err == nil || c0.Sent() != 0 {
		t.Fatalf("owner without weights: %v, %d bytes sent", err, c0.Sent())
	}
}
