package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/kord-fss/kord/internal/kat/vectors"
)

// TestKeygenEvalVectors reproduces every shared vector through the CLI.
func TestKeygenEvalVectors(t *testing.T) {
	vs, err := vectors.Load()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		keygenVector(t, i, v.Pair, "--type", v.Type,
			"--in-bits", strconv.Itoa(v.InBits), "--out-bits", strconv.Itoa(v.OutBits),
			"--alpha", strconv.FormatUint(v.Alpha, 10), "--beta", strconv.FormatUint(v.Beta, 10))
		for _, e := range v.Evals[:min(2, len(v.Evals))] {
			for b, key := range []string{v.Key0, v.Key1} {
				out, errOut, code := runKord(t, "eval", "--key", key, "--x", strconv.FormatUint(e.X, 10))
				want := e.Y0
				if b == 1 {
					want = e.Y1
				}
				if code != 0 || strings.TrimSpace(out) != strconv.FormatUint(want, 10) {
					t.Fatalf("vector %d eval key%d x=%d: %q %q exit %d, want %d", i, b, e.X, out, errOut, code, want)
				}
			}
		}
	}
}

// keygenVector runs kord keygen with args and vector i's roots and checks
// that it prints the vector's two keys.
func keygenVector(t *testing.T, i int, v vectors.Pair, args ...string) {
	t.Helper()
	out, errOut, code := runKord(t, append(append([]string{"keygen"}, args...), "--root0", v.Root0, "--root1", v.Root1)...)
	if code != 0 {
		t.Fatalf("vector %d: exit %d: %s", i, code, errOut)
	}
	lines := strings.Fields(out)
	if len(lines) != 2 || lines[0] != v.Key0 || lines[1] != v.Key1 {
		t.Fatalf("vector %d: keygen printed %q", i, out)
	}
}

// TestKeygenBadInput: each kind of bad input exits 2 with a one-line message
// naming what is wrong.
func TestKeygenBadInput(t *testing.T) {
	base := []string{"keygen", "--type", "dpf", "--in-bits", "8", "--out-bits", "8", "--alpha", "3", "--beta", "4"}
	with := func(flag, val string) []string {
		args := append([]string(nil), base...)
		for i := range args {
			if args[i] == flag {
				args[i+1] = val
				return args
			}
		}
		return append(args, flag, val)
	}
	cases := []struct {
		args []string
		want string
	}{
		{with("--alpha", "256"), "--alpha"},
		{with("--beta", "256"), "--beta"},
		{with("--type", "dxf"), "--type"},
		{with("--in-bits", "65"), "--in-bits"},
		{with("--out-bits", "0"), "--out-bits"},
		{with("--root0", "00"), "--root"},
		{append(with("--root0", "zz"), "--root1", "00"), "--root0"},
		{append(with("--root0", strings.Repeat("0", 32)), "--root1", strings.Repeat("0", 30)), "--root1"},
		{append(with("--root0", strings.Repeat("ab", 16)), "--root1", strings.Repeat("AB", 16)), "--root0 and --root1 are equal"},
		{[]string{"eval", "--key", "4b01", "--x", "0"}, "--key"},
		{[]string{"eval", "--key", "xyz", "--x", "0"}, "hex"},
	}
	for _, c := range cases {
		_, errOut, code := runKord(t, c.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", c.args, code, errOut)
		}
		if strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: message %q should be one line naming %s", c.args, errOut, c.want)
		}
	}
	// A good key evaluated outside its domain.
	out, _, _ := runKord(t, base...)
	key := strings.Fields(out)[0]
	if _, errOut, code := runKord(t, "eval", "--key", key, "--x", "256"); code != 2 || !strings.Contains(errOut, "--x") {
		t.Errorf("eval x=256 on an 8-bit key: exit %d %q", code, errOut)
	}
}

// TestUnknownSubcommandExits2: every command group refuses a typo with exit
// status 2 instead of printing help and succeeding.
func TestUnknownSubcommandExits2(t *testing.T) {
	for _, group := range []string{"bench", "ntru", "blocks", "pir", "fabric"} {
		_, errOut, code := runKord(t, group, "no-such-command")
		if code != 2 || !strings.Contains(errOut, "no-such-command") {
			t.Errorf("kord %s no-such-command: exit %d, %q", group, code, errOut)
		}
	}
}
