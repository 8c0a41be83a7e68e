package kdf

import (
	"os"
	"testing"

	"github.com/kord-fss/kord/internal/ctcheck"
)

// TestAES256ConstantTime checks aes256_amd64.s with internal/ctcheck: the
// key expansion and the block kernels form no address and take no branch
// from a key or a block.
func TestAES256ConstantTime(t *testing.T) {
	src, err := os.ReadFile("aes256_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	rep := ctcheck.Check(string(src))
	for _, v := range rep.Violations {
		t.Error(v)
	}
	if rep.MemOps < 150 {
		t.Errorf("checked %d memory operands: the parser missed the kernels", rep.MemOps)
	}
	for _, fn := range []string{"·expand256", "·encrypt256", "·encrypt256v"} {
		if !rep.Funcs[fn] {
			t.Errorf("kernel %s not found", fn)
		}
	}
}
