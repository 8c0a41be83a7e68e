package demo

import (
	"context"
	"testing"
)

// TestInProcess: a small in-process demo verifies every pair it makes, of
// every mode.
func TestInProcess(t *testing.T) {
	rep, err := InProcess(context.Background(), 300, 16, "", 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.PairsFailed != 0 || rep.PairsVerified == 0 || rep.Keys != 300 {
		t.Fatalf("%+v", rep)
	}
	for _, m := range []string{"bound", "consume", "derived", "dealer"} {
		if rep.KeysByMode[m] == 0 {
			t.Errorf("no %s keys: %v", m, rep.KeysByMode)
		}
	}
}
