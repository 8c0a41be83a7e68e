package gates

import (
	"fmt"
	"io"
)

// RunStats is what one two-party run over TCP cost online.
type RunStats struct {
	Ops        int
	BytesSent  [2]int64 // bytes each party wrote to its socket, headers included
	Rounds     [2]int64
	OfflineKey []KeyUse // keys requested for the whole batch (when metered)
}

// Split returns fresh additive shares of every input word mod 2^bits.
func Split(rnd io.Reader, in [][]uint64, bits int) (s [2][][]uint64, err error) {
	s[0] = make([][]uint64, len(in))
	s[1] = make([][]uint64, len(in))
	for i, x := range in {
		r, err := randWords(rnd, len(x), bits)
		if err != nil {
			return s, err
		}
		s[0][i] = r
		s[1][i] = make([]uint64, len(x))
		for j := range x {
			s[1][i][j] = (x[j] - r[j]) & mask(bits)
		}
	}
	return s, nil
}

// Online runs both parties' online phase of g concurrently over the two
// ends of a connection and returns the reconstructed outputs.
func Online(g Gate, c [2]*Conn, mat [2]Material, shares [2][][]uint64) ([][]uint64, error) {
	type res struct {
		out [][]uint64
		err error
	}
	ch := [2]chan res{make(chan res, 1), make(chan res, 1)}
	for b := 0; b < 2; b++ {
		go func(b int) {
			out, err := g.Eval(&Party{B: b, Conn: c[b]}, mat[b], shares[b])
			if err != nil {
				_ = c[b].Close() // unblock the peer
			}
			ch[b] <- res{out, err}
		}(b)
	}
	r0, r1 := <-ch[0], <-ch[1]
	if r0.err != nil {
		return nil, fmt.Errorf("party 0: %w", r0.err)
	}
	if r1.err != nil {
		return nil, fmt.Errorf("party 1: %w", r1.err)
	}
	widths := g.OutWidths()
	out := make([][]uint64, len(r0.out))
	for i := range out {
		if len(r0.out[i]) != len(widths) || len(r1.out[i]) != len(widths) {
			return nil, fmt.Errorf("gates: %s returned %d outputs, want %d", g.Name(), len(r0.out[i]), len(widths))
		}
		out[i] = make([]uint64, len(widths))
		for j, w := range widths {
			out[i][j] = (r0.out[i][j] + r1.out[i][j]) & mask(w)
		}
	}
	return out, nil
}

// Run is one complete two-party execution of g on plaintext inputs: it
// splits them into shares, generates key material through src, opens a
// loopback TCP connection and runs both parties, and returns the
// reconstructed outputs with the online cost.
func Run(g Gate, src KeySource, rnd io.Reader, in [][]uint64) ([][]uint64, RunStats, error) {
	st := RunStats{Ops: len(in)}
	shares, err := Split(rnd, in, g.InBits())
	if err != nil {
		return nil, st, err
	}
	mat, err := g.Gen(src, rnd, len(in))
	if err != nil {
		return nil, st, err
	}
	c0, c1, err := TCPPair()
	if err != nil {
		return nil, st, err
	}
	defer c0.Close()
	defer c1.Close()
	out, err := Online(g, [2]*Conn{c0, c1}, mat, shares)
	if err != nil {
		return nil, st, err
	}
	st.BytesSent = [2]int64{c0.Sent(), c1.Sent()}
	st.Rounds = [2]int64{c0.Rounds(), c1.Rounds()}
	return out, st, nil
}

// Check runs g on the inputs and compares every output with g.Ref. It
// returns the first mismatch as an error.
func Check(g Gate, src KeySource, rnd io.Reader, in [][]uint64) (RunStats, error) {
	out, st, err := Run(g, src, rnd, in)
	if err != nil {
		return st, err
	}
	widths := g.OutWidths()
	for i, x := range in {
		want := g.Ref(x)
		if len(want) != len(widths) {
			return st, fmt.Errorf("gates: %s: reference gives %d outputs for input %v, the gate %d", g.Name(), len(want), x, len(widths))
		}
		for j := range want {
			if out[i][j] != want[j]&mask(widths[j]) {
				return st, fmt.Errorf("gates: %s (%s) ℓ=%d: input %v output %d = %d, want %d", g.Name(), g.Variant(), g.InBits(), x, j, out[i][j], want[j]&mask(widths[j]))
			}
		}
	}
	return st, nil
}
