package gates

import (
	"strings"
	"testing"
)

// noInputs is EQ with an empty domain: nothing can be checked.
type noInputs struct{ EQ }

func (noInputs) Valid([]uint64) bool { return false }

// TestMeasureRefusesVacuousRows: a row with no input to check, or whose
// offline bytes disagree with what the link counted, is not verified.
func TestMeasureRefusesVacuousRows(t *testing.T) {
	o := TableOptions{Source: dealer(1), SourceName: "dealer", Rand: newSeeded(2)}
	if r := measureOne(noInputs{EQ{Bits: 8, Out: 8}}, o, 4); r.Verified || !strings.Contains(r.Error, "no valid input") {
		t.Fatalf("empty domain: verified=%v error=%q", r.Verified, r.Error)
	}
	if r := measureOne(noInputs{EQ{Bits: 16, Out: 16}}, o, 4); r.Verified || r.Error == "" {
		t.Fatalf("empty random sample: verified=%v error=%q", r.Verified, r.Error)
	}
	// A link that claims 3 bytes per call against a complement of derived
	// keys (0 bytes) must fail the row; an honest count must pass.
	var calls uint64
	o.LinkBytes = func() [2]uint64 { calls++; return [2]uint64{3 * calls, 3 * calls} }
	if r := measureOne(EQ{Bits: 4, Out: 4}, o, 4); r.Verified || !strings.Contains(r.Error, "link carried") {
		t.Fatalf("miscounted link: verified=%v error=%q", r.Verified, r.Error)
	}
	o.LinkBytes = func() [2]uint64 { return [2]uint64{7, 7} }
	if r := measureOne(EQ{Bits: 4, Out: 4}, o, 4); !r.Verified || r.Error != "" {
		t.Fatalf("honest link: verified=%v error=%q", r.Verified, r.Error)
	}
}
