package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestModuleBadSecret: a missing, short or non-hex provisioning secret is a
// one-line error with exit 2 that names the problem, and a failed start
// leaves no state file behind (so the next start with a good secret is not
// met by a half-made one).
func TestModuleBadSecret(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("abcd\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "m.db")
	base := []string{"module", "--party", "0", "--socket", filepath.Join(dir, "m.sock"), "--state", state}
	for _, c := range []struct {
		extra []string
		want  string
	}{
		{nil, "needs the provisioning secret"},
		{[]string{"--secret-file", short}, "2 bytes"},
		{[]string{"--secret", "zz"}, "--secret / KORD_SECRET: not hex"},
	} {
		_, stderr, code := runKord(t, append(append([]string{}, base...), c.extra...)...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", c.extra, code, stderr, c.want)
		}
		if _, err := os.Stat(state); !os.IsNotExist(err) {
			t.Fatalf("%v: the failed start left %s behind (%v)", c.extra, state, err)
		}
	}
}

// TestBadPrefault: --prefault-heap outside 0..16384 MiB (from the flag or
// the environment) stops both daemons before they open anything, with one
// line that names the setting.
func TestBadPrefault(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "m.db")
	mod := []string{"module", "--party", "0", "--socket", filepath.Join(dir, "m.sock"), "--state", state, "--secret", "00112233445566778899aabbccddeeff"}
	party := []string{"party", "--party", "1", "--module", filepath.Join(dir, "m.sock")}
	for _, args := range [][]string{
		append(slices.Clone(mod), "--prefault-heap", "-1"),
		append(slices.Clone(mod), "--prefault-heap", "16385"),
		append(slices.Clone(party), "--prefault-heap", "-5"),
	} {
		_, stderr, code := runKord(t, args...)
		if code != 2 || !strings.Contains(stderr, "--prefault-heap") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line naming --prefault-heap", args, code, stderr)
		}
		if _, err := os.Stat(state); !os.IsNotExist(err) {
			t.Fatalf("%v: the refused start left %s behind (%v)", args, state, err)
		}
	}
	t.Setenv("KORD_PREFAULT_HEAP", "-2")
	_, stderr, code := runKord(t, party...)
	if code != 2 || !strings.Contains(stderr, "--prefault-heap -2") {
		t.Errorf("KORD_PREFAULT_HEAP=-2: exit %d, stderr %q", code, stderr)
	}
}
