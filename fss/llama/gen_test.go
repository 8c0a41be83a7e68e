package llama

import (
	"testing"

	"github.com/kord-fss/kord/internal/gentest"
)

// TestGeneratedAssemblyCurrent regenerates rekey_amd64.s and compares: the
// kernels are reviewed as _asm/gen.go, so the committed file must be its
// output.
func TestGeneratedAssemblyCurrent(t *testing.T) {
	gentest.Current(t, "./_asm/gen.go", "rekey_amd64.s")
}
