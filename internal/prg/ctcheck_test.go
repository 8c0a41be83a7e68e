package prg

import (
	"os"
	"testing"

	"github.com/kord-fss/kord/internal/ctcheck"
	"github.com/kord-fss/kord/internal/gentest"
)

// TestKernelsConstantTime checks mmo_amd64.s with internal/ctcheck: no
// address a kernel forms and no branch it takes may depend on a secret,
// and constant tables are read at fixed offsets only. The check's own
// tests (internal/ctcheck) show it catching seeded leaks.
func TestKernelsConstantTime(t *testing.T) {
	src, err := os.ReadFile("mmo_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	rep := ctcheck.Check(string(src))
	for _, v := range rep.Violations {
		t.Error(v)
	}
	// Guard against a check that passes by reading nothing.
	if rep.MemOps < 5000 {
		t.Errorf("checked %d memory operands: the parser missed the kernels", rep.MemOps)
	}
	for _, fn := range []string{"·vaesDPFGenLevel", "·vaesDPFGenFirst", "·vaes512DPFGenLevel",
		"·vaes512DPFGenFirst", "·vaesDCFValues8", "·vaesTree", "·vaesTreeLeaves1M", "·vaes512MMO4"} {
		if !rep.Funcs[fn] {
			t.Errorf("kernel %s not found", fn)
		}
	}
	for _, sym := range []string{"genOne<>", "treeNotOne<>", "zmmTab<>"} {
		if !rep.Tables[sym] {
			t.Errorf("table %s not found", sym)
		}
	}
	// A key's output correction is data, found by its use.
	if got := rep.DataArgs["·vaesTreeLeaves1M"]; !contains(got, "final") {
		t.Errorf("vaesTreeLeaves1M: final not found used as data (%v)", got)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestGeneratedAssemblyCurrent regenerates mmo_amd64.s and compares, so
// TestKernelsConstantTime's verdict holds for the generator too.
func TestGeneratedAssemblyCurrent(t *testing.T) {
	gentest.Current(t, "./_asm", "mmo_amd64.s")
}
