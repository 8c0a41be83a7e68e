package selftest

import (
	"context"
	"strings"
	"testing"

	"github.com/kord-fss/kord/module/attack"
)

// TestRun runs a short self-test: every known answer passes, no attack
// class gets a frame through, the control recovers α and kord's rule does
// not leak it, and the verdict is nil.
func TestRun(t *testing.T) {
	r, err := Run(context.Background(), 2, 9)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if r.KAT.Failed != 0 || r.KAT.Passed == 0 || !r.HonestAfterAttacks || r.Seed != 9 || len(r.AlphaOracle) != 3 {
		t.Fatalf("%+v", r)
	}
	if len(r.Attacks) != len(attack.Classes) {
		t.Errorf("%d attack classes, want %d", len(r.Attacks), len(attack.Classes))
	}
	var text strings.Builder
	r.WriteText(&text)
	if !strings.Contains(text.String(), "honest key after attacks: true") || !strings.HasSuffix(text.String(), "attack seed: 9\nselftest: PASS\n") ||
		!strings.Contains(text.String(), "reuse α 64") || strings.Count(text.String(), "(control, the old rule") != 1 {
		t.Errorf("text report:\n%s", text.String())
	}
	if _, err := Run(context.Background(), 0, 9); err == nil {
		t.Error("accepted 0 tries")
	}
}

// TestErr checks the verdict's order: known answers, then the oracle, then
// the attacks.
func TestErr(t *testing.T) {
	r := &Report{oracleOK: true, attacksClean: true}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	if v := r.Verdict(); v != "selftest: PASS" {
		t.Errorf("verdict %q", v)
	}
	r.attacksClean = false
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "forged frame") {
		t.Errorf("attacks: %v", err)
	}
	if v := r.Verdict(); !strings.HasPrefix(v, "selftest: FAIL a forged frame") {
		t.Errorf("verdict %q", v)
	}
	r.oracleOK = false
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "α oracle") {
		t.Errorf("oracle: %v", err)
	}
	r.KAT.Failed = 1
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "known-answer") {
		t.Errorf("kat: %v", err)
	}
}
