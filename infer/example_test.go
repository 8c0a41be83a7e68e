package infer_test

import (
	"context"
	"fmt"

	"github.com/kord-fss/kord/gates"
	"github.com/kord-fss/kord/infer"
)

// Example evaluates a two-layer network with secret weights (party 0) on
// a secret input (party 1): keys and correlations from a pair of
// key-generation modules, both parties over loopback TCP, output equal to
// the cleartext fixed-point model.
func Example() {
	// 8-bit fixed point in Z_2^32: 1.0 = 256; biases carry 16 fractional bits.
	m := &infer.Model{Name: "tiny", Ring: 32, Frac: 8, Input: infer.Shape{C: 3, H: 1, W: 1},
		Layers: []infer.Layer{
			{Kind: infer.FC, In: 3, Out: 2, W: []int64{256, -512, 128, 64, 64, 64}, B: []int64{0, 1 << 16}},
			{Kind: infer.ReLU},
			{Kind: infer.Trunc, S: 8},
			{Kind: infer.FC, In: 2, Out: 2, W: []int64{256, 0, -256, 256}, B: []int64{0, 0}},
		}}
	x := []int64{512, 128, -256} // 2.0, 0.5, -1.0

	keys, err := gates.NewModuleSource(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer keys.Close()
	got, st, err := infer.Run(m, x, infer.Sources{Keys: keys, Corr: &infer.ModuleCorr{Pair: keys.Pair}})
	if err != nil {
		fmt.Println(err)
		return
	}
	want, _, _ := m.Ref(x)
	fmt.Println("secure:", got, "cleartext:", want) // 0.5 and 0.875 at 16 fractional bits
	fmt.Println("rounds:", st.Rounds)               // the weight opening, FC, ReLU, Trunc, FC, output
	// Output:
	// secure: [32768 57344] cleartext: [32768 57344]
	// rounds: 6
}
