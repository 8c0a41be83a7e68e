package gates

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kord-fss/kord/fss"
)

func newModules(t testing.TB) *ModuleSource {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	s, err := NewModuleSource(ctx)
	if err != nil {
		t.Fatalf("pairing modules: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestModuleKeysExhaustive8 runs every block at ℓ = 8 on every input with
// all keys from a pair of key-generation modules (no dealer), and checks
// that the bytes the host link carried equal the metered keystream-tier
// cost of the complement.
func TestModuleKeysExhaustive8(t *testing.T) {
	src := newModules(t)
	gs, err := StandardGates(8, newSeeded(7))
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range gs {
		t.Run(fmt.Sprintf("%s-%s", g.Name(), g.Variant()), func(t *testing.T) {
			in := AllInputs(g)
			meter := &Meter{Src: src}
			before := src.SentBytes()
			if _, err := Check(g, meter, newSeeded(uint64(800+i)), in); err != nil {
				t.Fatal(err)
			}
			after := src.SentBytes()
			for b := 0; b < 2; b++ {
				if got, want := after[b]-before[b], uint64(meter.Bytes()); got != want {
					t.Errorf("party %d: host link carried %d bytes, metered complement costs %d", b, got, want)
				}
			}
		})
	}
}

// TestModuleDerivedBeta: a derived batch with wantBeta draws β inside the
// modules (it used to send a public β = 1 beside DeriveBeta, which the
// module refuses); the key pair's value at 0 is β (α > 0) and equals the
// sum of the β shares.
func TestModuleDerivedBeta(t *testing.T) {
	src := newModules(t)
	p := fss.Params{Type: fss.DCF, InBits: 16, OutBits: 16}
	keys, as, bs, err := src.DerivedBatch(p, 8, true)
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[uint64]bool{}
	for i := range keys[0] {
		alpha := (as[0][i] + as[1][i]) & mask(16)
		beta := (bs[0][i] + bs[1][i]) & mask(16)
		distinct[beta] = true
		if alpha == 0 {
			continue
		}
		y0, _ := keys[0][i].Eval(0)
		y1, _ := keys[1][i].Eval(0)
		if (y0+y1)&mask(16) != beta {
			t.Fatalf("key %d: value at 0 is %d, β shares sum to %d", i, (y0+y1)&mask(16), beta)
		}
	}
	if len(distinct) < 2 {
		t.Fatal("β was not drawn at random")
	}
}
