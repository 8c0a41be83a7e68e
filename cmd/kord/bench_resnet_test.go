package main

import (
	"encoding/json"
	"testing"

	"github.com/kord-fss/kord/cmd/kord/internal/bench"
)

// TestBenchResNetKeys runs `kord bench resnet18-keys` on a share of a
// reduced ResNet's inventory through the five processes: every kind is a
// row, the rows add up to the total, sampled pairs verify and none fail,
// the dealer ran (no speed thresholds: the machine is shared).
func TestBenchResNetKeys(t *testing.T) {
	out, errOut, code := runKord(t, "bench", "resnet18-keys", "--model", "resnet18-s32-w4-c10", "--fraction", "0.25",
		"--chunk", "2048", "--per-request", "256", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var rep bench.ResNetKeysReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sum := 0
	for _, r := range rep.Rows {
		sum += r.Keys
		if r.Verified == 0 || r.VerifyFails != 0 {
			t.Errorf("row %+v", r)
		}
	}
	if !(rep.CorrelationSeconds > 0) || !rep.CorrVerified || rep.Correlations != 21 {
		t.Errorf("correlations: %d in %v s, verified %v", rep.Correlations, rep.CorrelationSeconds, rep.CorrVerified)
	}
	if rep.PeakRSS["party0"] <= 0 || rep.PeakRSS["module1"] <= 0 {
		t.Errorf("peak RSS per process not read: %v", rep.PeakRSS)
	}
	if len(rep.Rows) != 4 || sum != rep.Keys || rep.Keys == 0 || rep.VerifyFailed != 0 || !(rep.KeysPerSec > 0) || !(rep.DealerSeconds > 0) {
		t.Fatalf("report: %s", out)
	}
}

// TestBenchResNetKeysBadFlags: out-of-range flags and an unknown model
// are bad input (exit 2).
func TestBenchResNetKeysBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--fraction", "0"}, {"--fraction", "1.5"}, {"--chunk", "0"}, {"--model", "lenet"}} {
		_, errOut, code := runKord(t, append([]string{"bench", "resnet18-keys"}, args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
}
