package infer

import (
	"fmt"

	"github.com/kord-fss/kord/gates"
)

// Stats is the online cost of one two-party evaluation.
type Stats struct {
	BytesSent [2]int64 // bytes each party wrote to its socket, frame headers included
	Rounds    int64    // exchanges (both parties take part in every one)
}

// Online runs both parties' online phases concurrently over the two ends
// of a connection: party 0 with the model, party 1 with the architecture
// and the image. It returns the client's output. When either party fails,
// its connection is closed so the other returns too.
func Online(c [2]*gates.Conn, model *Model, mat [2]*Material, image []int64) ([]int64, error) {
	type res struct {
		out []int64
		err error
	}
	ch := [2]chan res{make(chan res, 1), make(chan res, 1)}
	arch := model.Arch()
	for b := 0; b < 2; b++ {
		go func(b int) {
			var out []int64
			var err error
			if b == 0 {
				out, err = Eval(&gates.Party{B: 0, Conn: c[0]}, model, mat[0], nil)
			} else {
				out, err = Eval(&gates.Party{B: 1, Conn: c[1]}, arch, mat[1], image)
			}
			if err != nil {
				_ = c[b].Close()
			}
			ch[b] <- res{out, err}
		}(b)
	}
	r0, r1 := <-ch[0], <-ch[1]
	if r1.err != nil { // the client's error names the cause first (bad image)
		return nil, r1.err
	}
	if r0.err != nil {
		return nil, r0.err
	}
	return r1.out, nil
}

// Run is one complete secure evaluation in this process: it generates the
// material from src, opens a loopback TCP connection and runs both
// parties. It returns the client's logits and the online cost.
func Run(model *Model, image []int64, src Sources) ([]int64, Stats, error) {
	var st Stats
	mat, err := Gen(model.Arch(), src)
	if err != nil {
		return nil, st, err
	}
	c0, c1, err := gates.TCPPair()
	if err != nil {
		mat[0].Wipe()
		mat[1].Wipe()
		return nil, st, err
	}
	defer c0.Close()
	defer c1.Close()
	out, err := Online([2]*gates.Conn{c0, c1}, model, mat, image)
	if err != nil {
		return nil, st, err
	}
	st.BytesSent = [2]int64{c0.Sent(), c1.Sent()}
	st.Rounds = c0.Rounds()
	if c1.Rounds() != st.Rounds {
		return nil, st, fmt.Errorf("infer: the parties ran %d and %d rounds", st.Rounds, c1.Rounds())
	}
	return out, st, nil
}
