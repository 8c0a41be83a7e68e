package llamagates

import (
	"errors"
	"testing"
)

func FuzzParseMasks(f *testing.F) {
	f.Add([]byte(`{"relu":{"r_in":["1","2"],"r_out":["3","4"]},"ars":{"r_in":["5"],"r_out":["6"]},"maxpool":{"r_in":["7","8"],"r_out":["9"]}}`))
	f.Add([]byte(`{"relu":{"r_in":["65536"]}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, js []byte) {
		fs := &Files{Params: Params{Profile: "llama", Type: "gates", Bits: 16, Relu: 2, Ars: 1, Shift: 3, MaxPool: 1}}
		err := fs.parseMasks("masks.json", 1, js)
		if err != nil {
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("an error that is not ErrBadInput: %v", err)
			}
			return
		}
		for i, r := range fs.Params.Runs() {
			if len(fs.RIn[1][i]) != r.N*r.G.Masks() || len(fs.ROut[1][i]) != r.N {
				t.Fatalf("run %d: %d and %d shares accepted", i, len(fs.RIn[1][i]), len(fs.ROut[1][i]))
			}
			for _, v := range append(append([]uint64(nil), fs.RIn[1][i]...), fs.ROut[1][i]...) {
				if v >= 1<<16 {
					t.Fatalf("share %d accepted at 16 bits", v)
				}
			}
		}
	})
}
