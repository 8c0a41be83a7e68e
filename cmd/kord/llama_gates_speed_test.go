package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/cmd/kord/internal/llamagates"
	"github.com/kord-fss/kord/fss/llama"
)

// TestLlamaGatesSpeed (KORD_GATES_SPEED=1, or =N for N packs of each gate; BENCHMARKS.md, "LLAMA gate
// packs"): gate packs per second through the five processes (two module
// processes, two party daemons, this process as the application writing
// the directory) against kord's in-process dealer (llama.GenGates from
// crypto/rand secrets, both parties' bytes, no files) for the same packs
// in the same run.
func TestLlamaGatesSpeed(t *testing.T) {
	if os.Getenv("KORD_GATES_SPEED") == "" {
		t.Skip("set KORD_GATES_SPEED=1 to measure")
	}
	_, c := startCluster(t, t.TempDir(), cluster.Options{PeerPlaintext: true})
	const bits, shift = 64, 12
	n := 2048 // packs of each gate; KORD_GATES_SPEED=N sets another N ≥ 1
	if v, err := strconv.Atoi(os.Getenv("KORD_GATES_SPEED")); err == nil && v > 1 {
		n = v
	}
	relu, ars, maxpool := n, n, n
	packs := relu + ars + maxpool
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for round := range 3 {
		dir := filepath.Join(t.TempDir(), "g")
		start := time.Now()
		if _, err := llamagates.Write(ctx, llamagates.Config{Dir: dir, Bits: bits, Relu: relu, Ars: ars, Shift: shift, MaxPool: maxpool,
			Party0: c.Party(0).Ready["app"], Party1: c.Party(1).Ready["app"]}); err != nil {
			t.Fatal(err)
		}
		proc := time.Since(start)

		start = time.Now()
		for _, r := range []struct {
			g llama.Gate
			n int
		}{
			{llama.Gate{Kind: llama.GateReLU, Bits: bits}, relu},
			{llama.Gate{Kind: llama.GateARS, Bits: bits, Shift: shift}, ars},
			{llama.Gate{Kind: llama.GateMaxPool, Bits: bits}, maxpool},
		} {
			sec := make([]llama.GateSecrets, r.n)
			for i := range sec {
				var err error
				if sec[i], err = llama.RandomGateSecrets(r.g); err != nil {
					t.Fatal(err)
				}
			}
			o0, o1 := make([]byte, r.n*r.g.PackSize()), make([]byte, r.n*r.g.PackSize())
			if err := llama.GenGates(r.g, sec, o0, o1); err != nil {
				t.Fatal(err)
			}
		}
		dealer := time.Since(start)
		pp, dp := float64(packs)/proc.Seconds(), float64(packs)/dealer.Seconds()
		t.Logf("round %d: %d packs of %d bits: five processes %.0f packs/s (%v), in-process dealer %.0f packs/s (%v), ratio %.2f",
			round, packs, bits, pp, proc.Round(time.Millisecond), dp, dealer.Round(time.Millisecond), pp/dp)
	}
}
