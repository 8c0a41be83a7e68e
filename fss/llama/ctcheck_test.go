package llama

import (
	"os"
	"testing"

	"github.com/kord-fss/kord/internal/ctcheck"
)

// TestRekeyConstantTime checks rekey_amd64.s with internal/ctcheck: no
// address or branch of the re-keying kernels depends on a seed or a round
// key, and their constant tables are read at fixed offsets.
func TestRekeyConstantTime(t *testing.T) {
	src, err := os.ReadFile("rekey_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	rep := ctcheck.Check(string(src))
	for _, v := range rep.Violations {
		t.Error(v)
	}
	if rep.MemOps < 80 {
		t.Errorf("checked %d memory operands: the parser missed the kernels", rep.MemOps)
	}
	for _, fn := range []string{"·rekeyExpand4", "·rekeyExpandZ8"} {
		if !rep.Funcs[fn] {
			t.Errorf("kernel %s not found", fn)
		}
	}
	if len(rep.Tables) == 0 {
		t.Error("no constant table found")
	}
}
