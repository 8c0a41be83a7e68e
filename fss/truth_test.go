package fss_test

import (
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/kord-fss/kord/fss"
)

func TestTruth(t *testing.T) {
	dpf, dcf := fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}, fss.Params{Type: fss.DCF, InBits: 8, OutBits: 8}
	for _, c := range []struct {
		p              fss.Params
		alpha, x, want uint64
	}{
		{dpf, 5, 5, 9}, {dpf, 5, 4, 0}, {dpf, 5, 6, 0}, {dpf, 0, 0, 9},
		{dcf, 5, 4, 9}, {dcf, 5, 0, 9}, {dcf, 5, 5, 0}, {dcf, 5, 6, 0}, {dcf, 0, 0, 0},
	} {
		if got := fss.Truth(c.p, c.alpha, 9, c.x); got != c.want {
			t.Errorf("Truth(%v, α=%d, β=9, x=%d) = %d, want %d", c.p, c.alpha, c.x, got, c.want)
		}
	}
}

// ExampleTruth checks a key pair against the function it shares.
func ExampleTruth() {
	p := fss.Params{Type: fss.DCF, InBits: 16, OutBits: 32}
	k0, k1, _ := fss.Gen(rand.Reader, p, 1000, 7)
	for _, x := range []uint64{999, 1000} {
		y0, _ := k0.Eval(x)
		y1, _ := k1.Eval(x)
		fmt.Println(uint32(y0+y1) == uint32(fss.Truth(p, 1000, 7, x)))
	}
	// Output:
	// true
	// true
}

// TestCheckPair: a pair passes at every point; a wrong (α, β), swapped or
// missing shares, or keys of two shapes fail.
func TestCheckPair(t *testing.T) {
	p := fss.Params{Type: fss.DPF, InBits: 10, OutBits: 16}
	k0, k1, err := fss.Gen(rand.Reader, p, 300, 77)
	if err != nil {
		t.Fatal(err)
	}
	xs := []uint64{0, 299, 300, 301, 1023}
	if err := fss.CheckPair(k0, k1, 300, 77, xs...); err != nil {
		t.Fatal(err)
	}
	o0, _, _ := fss.Gen(rand.Reader, fss.Params{Type: fss.DPF, InBits: 11, OutBits: 16}, 300, 77)
	for name, err := range map[string]error{
		"wrong β":      fss.CheckPair(k0, k1, 300, 78, xs...),
		"wrong α":      fss.CheckPair(k0, k1, 301, 77, xs...),
		"swapped":      fss.CheckPair(k1, k0, 300, 77, xs...),
		"missing":      fss.CheckPair(k0, nil, 300, 77, xs...),
		"two shapes":   fss.CheckPair(o0, k1, 300, 77, xs...),
		"out of range": fss.CheckPair(k0, k1, 300, 77, 1024),
	} {
		if err == nil {
			t.Errorf("%s: CheckPair passed", name)
		}
	}
}
