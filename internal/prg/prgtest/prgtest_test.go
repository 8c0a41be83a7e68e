package prgtest_test

import (
	"slices"
	"testing"

	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/internal/prg/prgtest"
)

// TestRun: one subtest per kernel, each with its kernel in use, and the
// kernel in use before is in use after.
func TestRun(t *testing.T) {
	before := prg.Active()
	var seen []string
	prgtest.Run(t, func(t *testing.T) {
		seen = append(seen, prg.Active())
		if want := t.Name()[len("TestRun/"):]; prg.Active() != want {
			t.Errorf("subtest %s runs with kernel %s", want, prg.Active())
		}
	})
	if !slices.Equal(seen, prg.Kernels()) {
		t.Errorf("ran %v, want %v", seen, prg.Kernels())
	}
	if prg.Active() != before {
		t.Errorf("kernel %s in use after, want %s", prg.Active(), before)
	}
}
