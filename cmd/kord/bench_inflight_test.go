package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/kord-fss/kord/cmd/kord/internal/bench"
)

// TestBenchInflight runs a tiny sweep: every M is measured, the fit is
// positive and consistent (knee = W·Leff/C), the PNG is written, and bad
// input is refused.
func TestBenchInflight(t *testing.T) {
	png := filepath.Join(t.TempDir(), "f.png")
	var out bytes.Buffer
	o := inflightOpts{typ: "dpf", inBits: 8, outBits: 8, rounds: 1, minTime: time.Millisecond, json: true, png: png}
	if err := runBenchInflight(&out, o); err != nil {
		t.Fatal(err)
	}
	var res bench.InflightReport
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != len(bench.InflightM) || res.C != 4 || res.L != 8 {
		t.Fatalf("%d points, C %d, L %d", len(res.Points), res.C, res.L)
	}
	if !(res.W > 0 && res.Leff > 0) || abs(res.Knee-res.W*res.Leff/float64(res.C)) > 1e-9*res.Knee {
		t.Fatalf("fit W %v Leff %v knee %v", res.W, res.Leff, res.Knee)
	}
	for _, bad := range []inflightOpts{{typ: "xor", inBits: 8, outBits: 8, rounds: 1, minTime: time.Millisecond},
		{typ: "dpf", inBits: 0, outBits: 8, rounds: 1, minTime: time.Millisecond},
		{typ: "dpf", inBits: 8, outBits: 8, rounds: 0, minTime: time.Millisecond},
		{typ: "dpf", inBits: 8, outBits: 8, rounds: 1, minTime: time.Millisecond, keysPerWorker: []int{4}},
		{typ: "dpf", inBits: 8, outBits: 8, rounds: 1, minTime: time.Millisecond, keysPerWorker: []int{0, 4}},
		{typ: "dpf", inBits: 8, outBits: 8, rounds: 1, minTime: time.Millisecond, keysPerWorker: []int{1, bench.MaxKeysPerWorker + 1}}} {
		if err := runBenchInflight(&out, bad); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestBenchInflightKeysPerWorker: --keys-per-worker picks the M swept.
func TestBenchInflightKeysPerWorker(t *testing.T) {
	_, errOut, code := runKord(t, "bench", "inflight", "--keys-per-worker", "8,2,8", "--rounds", "1", "--time", "1ms", "--in-bits", "8", "--out-bits", "8", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	out, _, _ := runKord(t, "bench", "inflight", "--keys-per-worker", "2,8", "--rounds", "1", "--time", "1ms", "--in-bits", "8", "--out-bits", "8", "--json")
	var res bench.InflightReport
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 2 || res.Points[0].M != 2 || res.Points[1].M != 8 {
		t.Fatalf("points %+v, want M = 2 and 8", res.Points)
	}
	if _, _, code := runKord(t, "bench", "inflight", "--keys-per-worker", "4"); code != 2 {
		t.Errorf("one value: exit %d, want 2", code)
	}
}
