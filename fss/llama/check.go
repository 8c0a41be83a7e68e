package llama

import "fmt"

// CheckPair parses key0 (party 0, server) and key1 (party 1, client) as
// keys of shape p and evaluates both at each x of xs; it returns nil if
// their shares add up, element by element mod 2^Bout, to β·[x < α] at
// every x, else an error that says where they do not. With no xs it
// checks the points around α and the ends of the domain. It is the llama
// counterpart of fss.CheckPair, for tests of every layer that carries
// llama keys.
func CheckPair(p Params, key0, key1 []byte, alpha uint64, beta []uint64, xs ...uint64) error {
	k0, err := Parse(p, key0)
	if err != nil {
		return fmt.Errorf("llama: CheckPair: key 0: %w", err)
	}
	k1, err := Parse(p, key1)
	if err != nil {
		return fmt.Errorf("llama: CheckPair: key 1: %w", err)
	}
	if len(beta) != p.Group {
		return fmt.Errorf("llama: CheckPair: %w: %d elements, group %d", ErrPayload, len(beta), p.Group)
	}
	if len(xs) == 0 {
		m := mask(p.InBits)
		xs = []uint64{0, m, alpha & m, (alpha - 1) & m, (alpha + 1) & m}
	}
	y0, y1 := make([]uint64, p.Group), make([]uint64, p.Group)
	m := mask(p.OutBits)
	for _, x := range xs {
		if err := k0.EvalInto(0, x, y0); err != nil {
			return fmt.Errorf("llama: CheckPair at x=%d: %w", x, err)
		}
		if err := k1.EvalInto(1, x, y1); err != nil {
			return fmt.Errorf("llama: CheckPair at x=%d: %w", x, err)
		}
		for i := range y0 {
			want := uint64(0)
			if x < alpha {
				want = beta[i] & m
			}
			if got := (y0[i] + y1[i]) & m; got != want {
				return fmt.Errorf("llama: %v pair for α=%d: element %d adds to %d at x=%d, want %d", p, alpha, i, got, x, want)
			}
		}
	}
	return nil
}
