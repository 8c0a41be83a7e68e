package infer

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/kord-fss/kord/gates"
	"github.com/kord-fss/kord/service/servicetest"
)

// BenchmarkSupplyCNN compares, per CNN image, three key supplies in one
// run: both modules of an in-process pair generating both parties'
// material (localpair), both parties each fetching its own from its own
// party daemon with its module behind a module socket (daemons, the
// deployment path in process), and the trusted dealer generating both
// parties' material and encoding it (dealer, without any link).
func BenchmarkSupplyCNN(b *testing.B) {
	m := loadModel(b, "cnn")
	arch := m.Arch()
	b.Run("localpair", func(b *testing.B) {
		ks, err := gates.NewModuleSource(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		defer ks.Close()
		sp, sess, err := NewSupply(arch, Sources{Keys: ks, Corr: &ModuleCorr{Pair: ks.Pair}})
		if err != nil {
			b.Fatal(err)
		}
		defer sess[0].Wipe()
		defer sess[1].Wipe()
		loopGen(b, sp)
	})
	b.Run("daemons", func(b *testing.B) {
		apps := servicetest.Start(b, 4096, nil).Apps
		ctx := context.Background()
		var ps [2]*PartySupply
		var errs [2]error
		var wg sync.WaitGroup
		for p := 0; p < 2; p++ {
			wg.Add(1)
			go func(p int) {
				defer wg.Done()
				var sess *Session
				ps[p], sess, errs[p] = NewPartySupply(ctx, p, apps[p], arch, 1)
				if errs[p] == nil {
					sess.Wipe()
				}
			}(p)
		}
		wg.Wait()
		if err := errors.Join(errs[:]...); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			var mats [2]*Material
			for p := 0; p < 2; p++ {
				wg.Add(1)
				go func(p int) { defer wg.Done(); mats[p], errs[p] = ps[p].Gen() }(p)
			}
			wg.Wait()
			if err := errors.Join(errs[:]...); err != nil {
				b.Fatal(err)
			}
			mats[0].Wipe()
			mats[1].Wipe()
		}
		ps[0].Close()
		ps[1].Close()
	})
	b.Run("dealer", func(b *testing.B) {
		sp, sess, err := NewSupply(arch, Sources{Keys: &gates.DealerSource{}, Corr: &DealerCorr{}})
		if err != nil {
			b.Fatal(err)
		}
		defer sess[0].Wipe()
		defer sess[1].Wipe()
		for b.Loop() {
			mat, err := sp.Gen()
			if err != nil {
				b.Fatal(err)
			}
			for p := 0; p < 2; p++ {
				raw, err := mat[p].MarshalBinary(arch.Ring)
				if err != nil {
					b.Fatal(err)
				}
				clear(raw)
				mat[p].Wipe()
			}
		}
	})
}
