package llama

import (
	"crypto/aes"
	"math/rand/v2"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
)

// BenchmarkBatchGen: llama-profile DCF 32/32 keys/s on one goroutine,
// beside kord-v1's BatchGen for the same shape in the same run.
func BenchmarkBatchGen(b *testing.B) {
	const n = 4096
	r := rand.New(rand.NewPCG(1, 1))
	b.Run("llama-dcf-32", func(b *testing.B) {
		p := Params{32, 32, 1}
		alpha, beta, r0, r1 := batchInputs(r, p, n)
		out0, out1 := make([]byte, n*p.KeySize()), make([]byte, n*p.KeySize())
		for b.Loop() {
			if err := GenBatch(p, alpha, beta, r0, r1, out0, out1); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "keys/s")
	})
	b.Run("kord-v1-dcf-32", func(b *testing.B) {
		p := fss.Params{Type: fss.DCF, InBits: 32, OutBits: 32}
		alpha, beta, r0, r1 := batchInputs(r, Params{32, 32, 1}, n) // the same inputs' shape
		out0, out1 := make([]byte, n*p.KeySize()), make([]byte, n*p.KeySize())
		g, err := fss.NewBatchGen(p, fss.BatchOptions{Workers: 1})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if err := g.GenWithRoots(alpha, beta, r0, r1, out0, out1); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "keys/s")
	})
}

// BenchmarkNode isolates the PRG cost of one tree node for one party:
// LLAMA's re-keyed PRG (an AES key expansion plus four encryptions: the
// node kernel this CPU selects, the AES-NI kernel alone, and
// crypto/aes.NewCipher's schedule alone) against kord-v1's fixed-key MMO
// (four lanes, nothing to expand), all per node.
func BenchmarkNode(b *testing.B) {
	rekeyed := func(b *testing.B) {
		seeds := make([]Block, 1024)
		ex := make([][4]Block, len(seeds))
		for i := range seeds {
			seeds[i][0], seeds[i][5] = byte(i), byte(i>>8)
		}
		for b.Loop() {
			if err := expandNodes(ex, seeds); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(seeds)*b.N)/b.Elapsed().Seconds(), "nodes/s")
	}
	b.Run("llama-rekeyed", rekeyed)
	b.Run("llama-rekeyed-aesni", func(b *testing.B) {
		// The AES-NI kernel alone (two nodes interleaved), as on CPUs
		// without AVX-512 VAES.
		setKernelVariant(false)
		defer setKernelVariant(true)
		rekeyed(b)
	})
	b.Run("crypto-aes-newcipher", func(b *testing.B) {
		var k Block
		for b.Loop() {
			k[0]++
			if _, err := aes.NewCipher(k[:]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "nodes/s")
	})
	b.Run("kord-v1-mmo", func(b *testing.B) {
		in := make([]prg.Block, 1024)
		sl, sr := make([]prg.Block, len(in)), make([]prg.Block, len(in))
		vl, vr := make([]prg.Block, len(in)), make([]prg.Block, len(in))
		for b.Loop() {
			prg.ExpandAll(sl, sr, vl, vr, in)
		}
		b.ReportMetric(float64(len(in)*b.N)/b.Elapsed().Seconds(), "nodes/s")
	})
}
