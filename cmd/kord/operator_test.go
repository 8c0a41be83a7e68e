package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLlamaVerifyUsesRecordedBeta: llama export records β in params.json
// and verify checks against it without --beta; a wrong --beta fails
// naming the β the keys were made for, with one "kord:" prefix; a second
// export into the directory is refused unless --force.
func TestLlamaVerifyUsesRecordedBeta(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if _, errOut, code := runKord(t, "llama", "export", "--dir", dir, "--keys", "8", "--in-bits", "12", "--out-bits", "10", "--beta", "5,7,9"); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	if out, errOut, code := runKord(t, "llama", "verify", "--dir", dir); code != 0 || !strings.Contains(out, "5 7 9") {
		t.Fatalf("verify without --beta: exit %d\n%s%s", code, out, errOut)
	}
	_, errOut, code := runKord(t, "llama", "verify", "--dir", dir, "--beta", "5,7,8")
	if code == 0 || !strings.Contains(errOut, "made for β = [5 7 9]") {
		t.Fatalf("verify with a wrong --beta: exit %d, %q", code, errOut)
	}
	if strings.Count(errOut, "kord") != 1 {
		t.Errorf("repeated prefix: %q", errOut)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "server.dat"))
	if _, errOut, code := runKord(t, "llama", "export", "--dir", dir, "--keys", "2", "--in-bits", "8", "--out-bits", "8"); code != 2 || !strings.Contains(errOut, "--force") {
		t.Fatalf("export over an export: exit %d, %q", code, errOut)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "server.dat")); string(after) != string(before) {
		t.Fatal("a refused export changed server.dat")
	}
	if _, errOut, code := runKord(t, "llama", "export", "--dir", dir, "--keys", "2", "--in-bits", "8", "--out-bits", "8", "--force"); code != 0 {
		t.Fatalf("export --force: exit %d, %q", code, errOut)
	}
	if _, errOut, code := runKord(t, "llama", "verify", "--dir", dir); code != 0 {
		t.Fatalf("verify after export --force: exit %d, %q", code, errOut)
	}
}

// TestEvalLlama: kord eval --profile llama evaluates the LLAMA keys kord
// keygen --profile llama writes: the two parties' shares sum to
// β_j·[x < α] mod 2^Bout at points below, at and above α; a LLAMA key
// given as kord-v1 is refused naming --profile llama.
func TestEvalLlama(t *testing.T) {
	out, errOut, code := runKord(t, "keygen", "--profile", "llama", "--type", "dcf", "--in-bits", "10", "--out-bits", "12",
		"--alpha", "300", "--beta", "4000,17")
	if code != 0 {
		t.Fatalf("keygen: exit %d: %s", code, errOut)
	}
	keys := strings.Fields(out)
	beta := []uint64{4000, 17}
	for _, x := range []uint64{0, 299, 300, 301, 1023} {
		var shares [2][]uint64
		for b := range 2 {
			o, errOut, code := runKord(t, "eval", "--profile", "llama", "--in-bits", "10", "--out-bits", "12", "--party", strconv.Itoa(b),
				"--key", keys[b], "--x", strconv.FormatUint(x, 10))
			if code != 0 {
				t.Fatalf("eval party %d at %d: exit %d: %s", b, x, code, errOut)
			}
			for _, f := range strings.Fields(o) {
				v, err := strconv.ParseUint(f, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				shares[b] = append(shares[b], v)
			}
		}
		for j, bj := range beta {
			want := uint64(0)
			if x < 300 {
				want = bj
			}
			if got := (shares[0][j] + shares[1][j]) % 4096; got != want {
				t.Fatalf("x = %d, element %d: shares sum to %d, want %d", x, j, got, want)
			}
		}
	}
	_, errOut, code = runKord(t, "eval", "--key", keys[0], "--x", "1")
	if code != 2 || !strings.Contains(errOut, "--profile llama") {
		t.Fatalf("a LLAMA key as kord-v1: exit %d, %q", code, errOut)
	}
	_, errOut, code = runKord(t, "eval", "--profile", "llama", "--in-bits", "11", "--out-bits", "12", "--party", "0", "--key", keys[0], "--x", "1")
	if code != 2 || !strings.Contains(errOut, "--in-bits") {
		t.Fatalf("a LLAMA key of another shape: exit %d, %q", code, errOut)
	}
}

// TestNtruKeygenRefusesOverwrite: ntru keygen replaces no key file
// unless --force.
func TestNtruKeygenRefusesOverwrite(t *testing.T) {
	dir := t.TempDir()
	pub, priv := filepath.Join(dir, "k.pub"), filepath.Join(dir, "k.priv")
	if _, errOut, code := runKord(t, "ntru", "keygen", "--pub", pub, "--priv", priv); code != 0 {
		t.Fatal(errOut)
	}
	before, _ := os.ReadFile(priv)
	_, errOut, code := runKord(t, "ntru", "keygen", "--pub", filepath.Join(dir, "other.pub"), "--priv", priv)
	if code != 2 || !strings.Contains(errOut, "already exists") {
		t.Fatalf("keygen over a private key: exit %d, %q", code, errOut)
	}
	if after, _ := os.ReadFile(priv); string(after) != string(before) {
		t.Fatal("the private key was replaced")
	}
	if _, err := os.Stat(filepath.Join(dir, "other.pub")); err == nil {
		t.Fatal("a refused keygen wrote a public key")
	}
	if _, errOut, code := runKord(t, "ntru", "keygen", "--pub", pub, "--priv", priv, "--force"); code != 0 {
		t.Fatalf("keygen --force: exit %d, %q", code, errOut)
	}
}

// TestMissingFileExitCode: a file the user names that is not there exits
// 2 from every command.
func TestMissingFileExitCode(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	for _, args := range [][]string{
		{"pir", "info", missing},
		{"pir", "mkdb", "--out", filepath.Join(missing, "db")},
		{"llama", "verify", "--dir", missing},
		{"ntru", "encrypt", "--key", missing, "--in", missing, "--out", filepath.Join(dir, "o")},
	} {
		if _, errOut, code := runKord(t, args...); code != 2 {
			t.Errorf("kord %v: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
}

func TestOncePrefixes(t *testing.T) {
	for in, want := range map[string]string{
		"module: module: not paired":           "module: not paired",
		"kord: pair: module: module: x":        "pair: module: x",
		"store: opening a: timeout":            "store: opening a: timeout",
		"x509: certificate is valid for a, b":  "x509: certificate is valid for a, b",
		"llamaexport: bad input: dir: x: x: y": "llamaexport: bad input: dir: x: y",
	} {
		if got := oncePrefixes(in); got != want {
			t.Errorf("oncePrefixes(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestListsWhatItTakes: a command given nothing, or a name it does not
// know, says what it takes: every chaos test, every model.
func TestListsWhatItTakes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"chaos"}, []string{"crash", "rollback", "network", "soak"}},
		{[]string{"infer", "demo", "--model", "foo"}, []string{"mlp", "cnn", "resnet18"}},
	} {
		_, errOut, code := runKord(t, c.args...)
		if code != 2 {
			t.Errorf("kord %v: exit %d, want 2", c.args, code)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("kord %v: %q does not name %s", c.args, errOut, w)
			}
		}
	}
}
