package msg

import (
	"strings"
	"testing"
)

func TestLlamaGatesShape(t *testing.T) {
	c := LlamaGates(37, 3, 2, 9, 4)
	a, r, z, err := c.Sizes()
	if err != nil || a != 0 || r != 3+2+8 || z != 9 {
		t.Fatalf("Sizes: %d %d %d %v", a, r, z, err)
	}
	if b, _ := c.Blocks(); b != 9 {
		t.Fatalf("Blocks %d, want one per pack", b)
	}
	gs, ns := c.GateRuns()
	if len(gs) != 3 || ns[0] != 3 || ns[1] != 2 || ns[2] != 4 || gs[1].Shift != 9 {
		t.Fatalf("runs %v %v", gs, ns)
	}
	if want := 3*gs[0].PackSize() + 2*gs[1].PackSize() + 4*gs[2].PackSize(); c.PackBytes() != want {
		t.Fatalf("PackBytes %d, want %d", c.PackBytes(), want)
	}
	sh := func() *CorrShares {
		return &CorrShares{Corr: c, R: make([]uint64, r), Z: make([]uint64, z), Packs: make([]byte, c.PackBytes())}
	}
	runs, err := SplitGates([2]*CorrShares{sh(), sh()})
	if err != nil || len(runs) != 3 || runs[2].N != 4 || len(runs[2].RIn[1]) != 8 {
		t.Fatalf("SplitGates: %v", err)
	}
	other := sh()
	other.Corr.Shift = 8
	if _, err := SplitGates([2]*CorrShares{sh(), other}); err == nil {
		t.Fatal("answers to two different requests were split as one")
	}
	short := sh()
	short.Packs = short.Packs[1:]
	if _, err := SplitGates([2]*CorrShares{sh(), short}); err == nil {
		t.Fatal("a short answer was split")
	}
	// A multiplication correlation may not carry gate fields.
	mv := Correlation{Kind: CorrMatVec, Ring: 16, In: 2, Out: 2, MaxPool: 1}
	if _, _, _, err := mv.Sizes(); err == nil || !strings.Contains(err.Error(), "MaxPool") {
		t.Fatalf("matvec with a MaxPool count: %v", err)
	}
}
