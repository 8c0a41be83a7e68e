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
