package attack

import (
	"context"
	"testing"
)

// TestAttacks runs every class (100 tries each, the CLI runs 1000) and
// asserts that no forged frame was accepted, moved a counter or reached
// the engine, and that the pair still produces correct keys afterwards.
func TestAttacks(t *testing.T) {
	rep, err := Run(context.Background(), 100, 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range Classes {
		r, ok := rep.Attacks[c]
		if !ok || r.Tried != 100 {
			t.Errorf("%s: tried %d", c, r.Tried)
		}
		if !r.Clean() {
			t.Errorf("%s: %+v", c, r)
		}
	}
	if !rep.HonestAfter {
		t.Error("pair broken after attacks")
	}
}
