package bench

import (
	"time"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/fss/llama"
)

// genLlama times k llama-profile DCF key pairs of p's widths (group 1) on
// w workers, each generating GenBatch keys a call into its own reused
// buffers, as gen does for kord-v1.
func genLlama(p fss.Params, k, w int) (time.Duration, error) {
	lp := llama.Params{InBits: p.InBits, OutBits: p.OutBits, Group: 1}
	b := min(k, GenBatch)
	alpha, beta, root0, root1 := Inputs(p, b, 1)
	for i := range root0 {
		root0[i][0] = root0[i][0]&^1 | (root1[i][0]&1 ^ 1) // LLAMA's roots differ in bit 0
	}
	size := lp.KeySize()
	outs := make([][2][]byte, w)
	for i := range outs {
		outs[i] = [2][]byte{make([]byte, b*size), make([]byte, b*size)}
	}
	return parallel(k, w, b, func(worker, lo, hi int) error {
		m := hi - lo
		o := outs[worker]
		return llama.GenBatch(lp, alpha[:m], beta[:m], root0[:m], root1[:m], o[0][:m*size], o[1][:m*size])
	})
}
