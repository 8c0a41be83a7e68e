package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCompareCLI: bad flags exit 2 with one line naming the flag; a small
// loopback run prints the documented JSON with every key verified and
// the row above --max-measured marked extrapolated.
func TestCompareCLI(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", "--link", "moon"}, "--link"},
		{[]string{"compare", "--bits", "8,x"}, "--bits"},
		{[]string{"compare", "--bits", "65"}, "--bits"},
		{[]string{"compare", "--max-measured", "40"}, "--max-measured"},
		{[]string{"compare", "--kord-keys", "0"}, "--kord-keys"},
		{[]string{"compare", "--block-bits", "1"}, "--block-bits"},
		{[]string{"compare", "--block-ops", "0"}, "--block-ops"},
	} {
		out, errOut, code := runKord(t, c.args...)
		lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("kord %v: exit %d, stdout %.60q, stderr %q; want exit 2 and one line naming %s", c.args, code, out, errOut, c.want)
		}
	}
	out, errOut, code := runKord(t, "compare", "--link", "loopback", "--bits", "4,9", "--fit-bits", "6",
		"--max-measured", "8", "--baseline-keys", "1", "--kord-keys", "1", "--block-bits", "", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Rows []struct {
			Block        string `json:"block"`
			InBits       int    `json:"in_bits"`
			Tier         string `json:"tier"`
			KeysVerified int    `json:"keys_verified"`
			KordRounds   int    `json:"kord_rounds"`
			Extrapolated bool   `json:"extrapolated"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(rep.Rows) != 8 {
		t.Fatalf("%d rows, want 8", len(rep.Rows))
	}
	for _, r := range rep.Rows {
		if r.KeysVerified < 2 || r.KordRounds != 1 || r.Extrapolated != (r.InBits == 9) {
			t.Fatalf("row %+v", r)
		}
	}
}
