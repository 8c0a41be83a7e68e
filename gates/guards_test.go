package gates

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// noInputs is EQ with an empty domain: nothing can be checked.
type noInputs struct{ EQ }

func (noInputs) Valid([]uint64) bool { return false }

// TestMeasureRefusesVacuousRows: a row with no input to check, or whose
// offline bytes disagree with what the link counted, is not verified.
func TestMeasureRefusesVacuousRows(t *testing.T) {
	o := TableOptions{Source: dealer(1), SourceName: "dealer", Rand: newSeeded(2)}
	if r := measureOne(noInputs{EQ{Bits: 8, Out: 8}}, o, 4); r.Verified || !strings.Contains(r.Error, "no valid input") {
		t.Fatalf("empty domain: verified=%v error=%q", r.Verified, r.Error)
	}
	if r := measureOne(noInputs{EQ{Bits: 16, Out: 16}}, o, 4); r.Verified || r.Error == "" {
		t.Fatalf("empty random sample: verified=%v error=%q", r.Verified, r.Error)
	}
	// A link that claims 3 bytes per call against a complement of derived
	// keys (0 bytes) must fail the row; an honest count must pass.
	var calls uint64
	o.LinkBytes = func() [2]uint64 { calls++; return [2]uint64{3 * calls, 3 * calls} }
	if r := measureOne(EQ{Bits: 4, Out: 4}, o, 4); r.Verified || !strings.Contains(r.Error, "link carried") {
		t.Fatalf("miscounted link: verified=%v error=%q", r.Verified, r.Error)
	}
	o.LinkBytes = func() [2]uint64 { return [2]uint64{7, 7} }
	if r := measureOne(EQ{Bits: 4, Out: 4}, o, 4); !r.Verified || r.Error != "" {
		t.Fatalf("honest link: verified=%v error=%q", r.Verified, r.Error)
	}
}

// TestMaterialSingleUse: a second Eval on the same material would open a
// second value under the same masks (revealing the inputs' difference); it
// must fail with ErrMaterial before anything is sent.
func TestMaterialSingleUse(t *testing.T) {
	gs, err := StandardGates(8, newSeeded(3))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		in := [][]uint64{make([]uint64, g.Arity()), make([]uint64, g.Arity())}
		mat, err := g.Gen(dealer(4), newSeeded(5), len(in))
		if err != nil {
			t.Fatal(err)
		}
		shares, err := Split(newSeeded(6), in, g.InBits())
		if err != nil {
			t.Fatal(err)
		}
		c0, c1, err := TCPPair()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Online(g, [2]*Conn{c0, c1}, mat, shares); err != nil {
			t.Fatalf("%s: %v", g.Name(), err)
		}
		sent := c0.Sent()
		_ = c0.c.SetDeadline(time.Now().Add(time.Second)) // fail, not hang, if Eval proceeds
		for b := 0; b < 2; b++ {
			_, err := g.Eval(&Party{B: b, Conn: c0}, mat[b], shares[b])
			if !errors.Is(err, ErrMaterial) {
				t.Errorf("%s %s: reused material: %v", g.Name(), g.Variant(), err)
			}
		}
		if c0.Sent() != sent {
			t.Errorf("%s: a refused Eval sent bytes", g.Name())
		}
		c0.Close()
		c1.Close()
	}
}

// TestApproxDegreeBound: binom is exact up to t = 62; a degree past the
// bound is refused instead of producing wrong coefficients.
func TestApproxDegreeBound(t *testing.T) {
	const want = 465428353255261088 // C(62, 31)
	if got := binom(62, 31); got != want || binom(maxDegree, maxDegree/2) != 601080390 {
		t.Fatalf("binom(62, 31) = %d, want %d", got, want)
	}
	g := Approx{Bits: 4, Out: 4, Coeffs: [][]uint64{make([]uint64, maxDegree+2)}}
	if _, err := g.Gen(dealer(1), nil, 1); err == nil || !strings.Contains(err.Error(), "degree") {
		t.Fatalf("degree %d: %v", maxDegree+1, err)
	}
	g.Coeffs[0] = make([]uint64, maxDegree+1)
	g.Coeffs[0][maxDegree] = 1
	in := AllInputs(g)
	if _, err := Check(g, dealer(2), newSeeded(3), in); err != nil {
		t.Fatal(err)
	}
}

// shortRef is Ctn whose reference forgets every output but the first.
type shortRef struct{ Ctn }

func (g shortRef) Ref(in []uint64) []uint64 { return g.Ctn.Ref(in)[:1] }

// TestCheckComparesEveryOutput: a reference that yields fewer outputs than
// the gate must not leave the rest unchecked.
func TestCheckComparesEveryOutput(t *testing.T) {
	g := shortRef{Ctn{Bits: 4, Out: 4, Knots: []uint64{3, 9}}}
	if _, err := Check(g, dealer(1), newSeeded(2), AllInputs(g)); err == nil {
		t.Fatal("outputs 1 and 2 were never compared, yet the check passed")
	}
}
