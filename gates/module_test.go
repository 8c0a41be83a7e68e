package gates

import (
	"context"
	"fmt"
	"testing"
	"time"
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
