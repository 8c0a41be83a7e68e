package gates_test

import (
	"context"
	"fmt"
	"log"

	"github.com/kord-fss/kord/gates"
)

// Example runs ReLU on a vector of secret-shared fixed-point values
// (16-bit two's complement, 8 fractional bits) between two parties over
// loopback TCP, with keys from a pair of key-generation modules: no dealer
// ever sees a mask.
func Example() {
	const bits, frac = 16, 8
	ctx := context.Background()
	src, err := gates.NewModuleSource(ctx) // two software modules, paired in process
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()

	// Fixed-point encode the plaintext (only to build the shares here).
	xs := []float64{-3.5, -0.25, 0, 0.75, 2.5, 100.125}
	in := make([][]uint64, len(xs))
	for i, x := range xs {
		in[i] = []uint64{uint64(int64(x*(1<<frac))) & (1<<bits - 1)}
	}
	shares, err := gates.Split(nil, in, bits) // party b gets shares[b]
	if err != nil {
		log.Fatal(err)
	}

	// Offline: one derived DCF and one bound DCF per element, from the modules.
	relu := gates.ReLU{Bits: bits}
	mat, err := relu.Gen(src, nil, len(xs))
	if err != nil {
		log.Fatal(err)
	}

	// Online: each party runs on its own TCP end (here, two goroutines).
	c0, c1, err := gates.TCPPair()
	if err != nil {
		log.Fatal(err)
	}
	defer c0.Close()
	defer c1.Close()
	type result struct {
		out [][]uint64
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := relu.Eval(&gates.Party{B: 1, Conn: c1}, mat[1], shares[1])
		done <- result{out, err}
	}()
	y0, err := relu.Eval(&gates.Party{B: 0, Conn: c0}, mat[0], shares[0])
	if err != nil {
		log.Fatal(err)
	}
	r1 := <-done
	if r1.err != nil {
		log.Fatal(r1.err)
	}

	// Reconstruct (for the demonstration) and decode.
	for i := range xs {
		y := (y0[i][0] + r1.out[i][0]) & (1<<bits - 1)
		fmt.Printf("relu(%v) = %v\n", xs[i], float64(int16(y))/(1<<frac))
	}
	fmt.Printf("online: %d round, %d bytes sent by party 0\n", c0.Rounds(), c0.Sent())
	// Output:
	// relu(-3.5) = 0
	// relu(-0.25) = 0
	// relu(0) = 0
	// relu(0.75) = 0.75
	// relu(2.5) = 2.5
	// relu(100.125) = 100.125
	// online: 1 round, 16 bytes sent by party 0
}
