package mpspdzrun

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kord-fss/kord/host"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/mpspdz"
)

func nextCounter(t *testing.T, lp *host.LocalPair) uint64 {
	t.Helper()
	r, err := lp.Devices[0].Poll(context.Background(), &msg.PollRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return r.NextCounter
}

// TestExportInProcess: the in-process module pair writes both players'
// files, which verify (every tuple's relation); a second export refuses
// the existing files before asking the modules for anything (no counter
// moved), and a bad item is refused the same way.
func TestExportInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lp, err := host.NewLocalPair(ctx, host.LocalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close()
	m, _ := mpspdz.Matrix(2, 3, 2)
	dir := t.TempDir()
	items := []Item{{mpspdz.Triples, 1000}, {mpspdz.Squares, 10}, {mpspdz.Bits, 300}, {m, 3}}
	rep, err := Export(ctx, Local{lp}, Options{Dir: dir, Items: items, Players: [2]bool{true, true}, Chunk: 256})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Files) != 8 || rep.Tuples != 1313 || rep.Requests != 4+1+2+3 {
		t.Fatalf("report %+v", rep)
	}
	files, err := mpspdz.Verify(dir)
	if err != nil || len(files) != 8 {
		t.Fatalf("verify: %+v %v", files, err)
	}
	for _, f := range files {
		if !f.Checked {
			t.Fatalf("%s not checked", f.File)
		}
	}
	before := nextCounter(t, lp)
	if _, err := Export(ctx, Local{lp}, Options{Dir: dir, Items: items, Players: [2]bool{true, true}}); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("overwrite: %v", err)
	}
	if _, err := Export(ctx, Local{lp}, Options{Dir: t.TempDir(), Items: []Item{{mpspdz.Bits, 0}}, Players: [2]bool{true, true}}); err == nil {
		t.Fatal("zero bits accepted")
	}
	if got := nextCounter(t, lp); got != before {
		t.Fatalf("refused exports moved the counter %d → %d", before, got)
	}
	if _, err := os.Stat(mpspdz.Path(dir, mpspdz.Triples, 0)); err != nil {
		t.Fatal(err)
	}
	// Forced: fresh tuples, still correct.
	if _, err := Export(ctx, Local{lp}, Options{Dir: dir, Items: items[:1], Players: [2]bool{true, true}, Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := mpspdz.Verify(dir); err != nil {
		t.Fatal(err)
	}
}
