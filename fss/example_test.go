package fss_test

import (
	"fmt"

	"github.com/kord-fss/kord/fss"
)

// A DPF pair shares the point function f(x) = β at x = α: the two parties'
// outputs add up to β at α and to 0 everywhere else.
func ExampleGen() {
	p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 32}
	k0, k1, err := fss.Gen(nil, p, 1234, 99)
	if err != nil {
		panic(err)
	}
	for _, x := range []uint64{1233, 1234, 1235} {
		y0, _ := k0.Eval(x)
		y1, _ := k1.Eval(x)
		fmt.Printf("f(%d) = %d\n", x, uint32(y0+y1))
	}
	// Output:
	// f(1233) = 0
	// f(1234) = 99
	// f(1235) = 0
}

// A DCF pair shares f(x) = β for x < α. Each party can evaluate its key over
// the whole domain at once.
func ExampleKey_EvalAll() {
	p := fss.Params{Type: fss.DCF, InBits: 3, OutBits: 8}
	k0, k1, _ := fss.Gen(nil, p, 5, 7)
	out0 := make([]uint64, 8)
	out1 := make([]uint64, 8)
	k0.EvalAll(out0)
	k1.EvalAll(out1)
	for x := range out0 {
		fmt.Print(uint8(out0[x]+out1[x]), " ")
	}
	fmt.Println()
	// Output: 7 7 7 7 7 0 0 0
}

// Keys travel in the kord-v1 wire format.
func ExampleParseKey() {
	p := fss.Params{Type: fss.DPF, InBits: 32, OutBits: 32}
	k0, _, _ := fss.Gen(nil, p, 7, 1)
	raw, _ := k0.MarshalBinary()
	k, err := fss.ParseKey(raw)
	fmt.Println(len(raw), err, k.Params(), k.Party())
	_, err = fss.ParseKey(raw[:len(raw)-1])
	fmt.Println(err)
	// Output:
	// 546 <nil> dpf-32→32 0
	// fss: key length does not match its header: got 545 bytes, a dpf-32→32 key is 546
}
