package gates

import "testing"

// TestTable8 runs the cost table at ℓ = 8 on module keys: every block is
// present and verified, the metered offline bytes equal what the host link
// carried, and no block costs more offline than KORD's published size.
func TestTable8(t *testing.T) {
	src := newModules(t)
	rows, err := Measure(TableOptions{Bits: []int{8}, Source: src, LinkBytes: src.SentBytes, SourceName: "modules", Rand: newSeeded(11)})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.Block] = true
		if !r.Verified {
			t.Errorf("%s %s: not verified: %s", r.Block, r.Variant, r.Error)
		}
		if r.OfflineLinkBytes == nil || *r.OfflineLinkBytes != r.OfflineWireBytes {
			t.Errorf("%s: link bytes %v differ from metered %v", r.Block, r.OfflineLinkBytes, r.OfflineWireBytes)
		}
		if r.KordPublished != nil && r.OfflineWireBytes > float64(*r.KordPublished) {
			t.Errorf("%s: %v offline bytes exceed KORD's %d", r.Block, r.OfflineWireBytes, *r.KordPublished)
		}
		if r.OnlineRounds < 1 || r.OnlineBytes <= 0 {
			t.Errorf("%s: online cost not counted: %+v", r.Block, r)
		}
	}
	for _, b := range []string{"EQ", "CMP", "Mod", "TR", "Ctn", "DigDec", "PubLUT", "PriLUT", "Approx", "ReLU", "DReLU"} {
		if !seen[b] {
			t.Errorf("block %s missing from the table", b)
		}
	}
}
