package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kord-fss/kord/cmd/kord/internal/bench"
)

// TestBenchDeliver runs a tiny `kord bench deliver --json`: every row is
// there, every delivered pair verified and none failed (no speed
// thresholds: the machine is shared), and the PNG is written.
func TestBenchDeliver(t *testing.T) {
	png := filepath.Join(t.TempDir(), "deliver.png")
	out, errOut, code := runKord(t, "bench", "deliver", "--json", "--keys", "300", "--chunk", "128", "--raw-time", "30ms", "--png", png)
	if code != 0 {
		t.Fatalf("kord bench deliver: exit %d\n%s", code, errOut)
	}
	var rep bench.DeliverReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := map[string]string{}
	for _, typ := range []string{"dpf", "dcf"} {
		for _, tier := range []string{"otp", "mac", "batchmac"} {
			want[fmt.Sprintf("%s-32-%s", typ, tier)] = "bound"
		}
		want[typ+"-32-derived"] = "derived"
	}
	if rep.CPUs < 1 || len(rep.Rows) != len(want) {
		t.Fatalf("%d CPUs, %d rows, want %d: %s", rep.CPUs, len(rep.Rows), len(want), out)
	}
	for _, r := range rep.Rows {
		name := fmt.Sprintf("%s-%d-%s", r.Type, r.InBits, r.Tier)
		mode, ok := want[name]
		if !ok || r.Mode != mode {
			t.Errorf("unexpected row %s mode %s", name, r.Mode)
		}
		delete(want, name)
		if r.PairsFailed != 0 || r.PairsVerified != 2*300 {
			t.Errorf("%s: %d pairs verified, %d failed, want 600 and 0", name, r.PairsVerified, r.PairsFailed)
		}
		if r.RawKeysPerSec <= 0 || r.InProcKeysPerSec <= 0 || r.ProcKeysPerSec <= 0 || r.InProcRatio <= 0 || r.ProcRatio <= 0 {
			t.Errorf("%s: a rate is not positive: %+v", name, r)
		}
	}
	if fi, err := os.Stat(png); err != nil || fi.Size() == 0 {
		t.Errorf("--png: %v", err)
	}
	if _, _, code := runKord(t, "bench", "deliver", "--batch", "0"); code != 2 {
		t.Errorf("--batch 0: exit %d, want 2", code)
	}
}

// TestBenchDeliverAppUnix: with --app-link unix the application reaches
// the parties over Unix sockets, every pair still verified; an unknown
// link is refused as bad input.
func TestBenchDeliverAppUnix(t *testing.T) {
	out, errOut, code := runKord(t, "bench", "deliver", "--json", "--app-link", "unix", "--keys", "200", "--chunk", "128", "--raw-time", "10ms")
	if code != 0 {
		t.Fatalf("kord bench deliver --app-link unix: exit %d\n%s", code, errOut)
	}
	var rep bench.DeliverReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, r := range rep.Rows {
		if r.PairsFailed != 0 || r.PairsVerified != 2*200 || r.ProcKeysPerSec <= 0 {
			t.Errorf("%s-%d-%s: %d pairs verified, %d failed, %v keys/s", r.Type, r.InBits, r.Tier, r.PairsVerified, r.PairsFailed, r.ProcKeysPerSec)
		}
	}
	if _, _, code := runKord(t, "bench", "deliver", "--app-link", "pipe"); code != 2 {
		t.Errorf("--app-link pipe: exit %d, want 2", code)
	}
}
