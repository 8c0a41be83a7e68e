package infer

import (
	"context"
	"testing"

	"github.com/kord-fss/kord/gates"
)

// benchImage measures, per MNIST image in one session (weights opened
// once, outside the timings), the offline generation (keys and input
// correlations from a module pair) and the online two-party evaluation
// over loopback TCP separately, and reports bytes per party and rounds.
func benchImage(b *testing.B, name string) {
	m := loadModel(b, name)
	set := testSet(b)
	x := QuantizeImage(set.Images[0], m.Frac)
	ks, err := gates.NewModuleSource(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer ks.Close()
	src := Sources{Keys: ks, Corr: &ModuleCorr{Pair: ks.Pair}}
	c0, c1, err := gates.TCPPair()
	if err != nil {
		b.Fatal(err)
	}
	defer c0.Close()
	defer c1.Close()
	sp, sess, err := NewSupply(m.Arch(), src)
	if err != nil {
		b.Fatal(err)
	}
	if err := OpenSessions([2]*gates.Conn{c0, c1}, m, sess); err != nil {
		b.Fatal(err)
	}
	b.Run("offline", func(b *testing.B) {
		loopGen(b, sp)
	})
	b.Run("online", func(b *testing.B) {
		c0.ResetCounters()
		c1.ResetCounters()
		n := 0
		for b.Loop() {
			b.StopTimer()
			mat, err := sp.Gen()
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := Online([2]*gates.Conn{c0, c1}, m, sess, mat, x); err != nil {
				b.Fatal(err)
			}
			n++
		}
		b.ReportMetric(float64(max(c0.Sent(), c1.Sent()))/float64(n), "B/party")
		b.ReportMetric(float64(c0.Rounds())/float64(n), "rounds")
	})
}

func BenchmarkMLP(b *testing.B) { benchImage(b, "mlp") }
func BenchmarkCNN(b *testing.B) { benchImage(b, "cnn") }

// BenchmarkRefCNN is the cleartext fixed-point model, per image.
func BenchmarkRefCNN(b *testing.B) {
	m := loadModel(b, "cnn")
	x := QuantizeImage(testSet(b).Images[0], m.Frac)
	for b.Loop() {
		if _, _, err := m.Ref(x); err != nil {
			b.Fatal(err)
		}
	}
}

// loopGen runs sp.Gen once per benchmark iteration, wiping both parties'
// material.
func loopGen(b *testing.B, sp *Supply) {
	for b.Loop() {
		mat, err := sp.Gen()
		if err != nil {
			b.Fatal(err)
		}
		mat[0].Wipe()
		mat[1].Wipe()
	}
}
