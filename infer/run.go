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

// runParties runs f for party 0 and party 1 concurrently; a party that fails
// closes its connection so the other returns too. The client's error is
// reported first (it names a bad image).
func runParties(c [2]*gates.Conn, f func(b int) ([]int64, error)) ([]int64, error) {
	type res struct {
		out []int64
		err error
	}
	ch := [2]chan res{make(chan res, 1), make(chan res, 1)}
	for b := 0; b < 2; b++ {
		go func(b int) {
			out, err := f(b)
			if err != nil {
				_ = c[b].Close()
			}
			ch[b] <- res{out, err}
		}(b)
	}
	r0, r1 := <-ch[0], <-ch[1]
	if r1.err != nil {
		return nil, r1.err
	}
	if r0.err != nil {
		return nil, r0.err
	}
	return r1.out, nil
}

// OpenSessions runs both parties' weight opening (Session.Open)
// concurrently over the two ends of a connection.
func OpenSessions(c [2]*gates.Conn, model *Model, sess [2]*Session) error {
	arch := model.Arch()
	_, err := runParties(c, func(b int) ([]int64, error) {
		m := model
		if b == 1 {
			m = arch
		}
		return nil, sess[b].Open(&gates.Party{B: b, Conn: c[b]}, m)
	})
	return err
}

// Online runs both parties' online phases of one evaluation concurrently
// over the two ends of a connection: party 0 with the model, party 1 with
// the architecture and the image. It returns the client's output.
func Online(c [2]*gates.Conn, model *Model, sess [2]*Session, mat [2]*Material, image []int64) ([]int64, error) {
	arch := model.Arch()
	return runParties(c, func(b int) ([]int64, error) {
		if b == 0 {
			return Eval(&gates.Party{B: 0, Conn: c[0]}, model, sess[0], mat[0], nil)
		}
		return Eval(&gates.Party{B: 1, Conn: c[1]}, arch, sess[1], mat[1], image)
	})
}

// Run is one complete secure evaluation in this process, in a session of
// its own: it draws the weight masks and the material from src, opens a
// loopback TCP connection and runs both parties. It returns the client's
// logits and the online cost (the weight opening included).
func Run(model *Model, image []int64, src Sources) ([]int64, Stats, error) {
	var st Stats
	sp, sess, err := NewSupply(model.Arch(), src)
	if err != nil {
		return nil, st, err
	}
	defer sess[0].Wipe()
	defer sess[1].Wipe()
	mat, err := sp.Gen()
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
	out, err := Online([2]*gates.Conn{c0, c1}, model, sess, mat, image)
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
