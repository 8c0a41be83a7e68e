package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kord-fss/kord/internal/peertls"
)

// TestPartyAppAuthFlags: bad application-API settings stop kord party
// before it opens anything (exit 2, one line naming the flag or file).
func TestPartyAppAuthFlags(t *testing.T) {
	dir := t.TempDir()
	certs := filepath.Join(dir, "tls")
	if err := peertls.InitApps(certs, 0, []string{"operator"}); err != nil {
		t.Fatal(err)
	}
	f := peertls.PartyFiles(certs, 0)
	base := []string{"party", "--party", "0", "--module", filepath.Join(dir, "m.sock"), "--peer", "127.0.0.1:1", "--peer-plaintext"}
	for _, c := range []struct {
		extra []string
		want  []string
	}{
		{[]string{"--listen", "0.0.0.0:0"}, []string{"not loopback", "--app-tls-cert", "--app-plaintext", "kord certs"}},
		{[]string{"--listen", "127.0.0.1:0", "--app-tls-cert", f.Cert}, []string{"go together"}},
		{[]string{"--listen", "127.0.0.1:0", "--app-tls-cert", f.Cert, "--app-tls-key", f.Key, "--app-ca", f.CA, "--app-plaintext"}, []string{"exclude"}},
		{[]string{"--listen", "127.0.0.1:0", "--app-tls-cert", f.Cert, "--app-tls-key", f.Key, "--app-ca", f.Key}, []string{"--app-ca", "no PEM certificate", f.Key}},
		{[]string{"--listen", "127.0.0.1:0", "--app-tls-cert", f.Key, "--app-tls-key", f.Key, "--app-ca", f.CA}, []string{"--app-tls-cert", f.Key}},
		{[]string{"--listen", "unix://" + filepath.Join(dir, "a.sock")}, []string{"--app-uid", "--app-plaintext"}},
		{[]string{"--listen", "unix://" + filepath.Join(dir, "a.sock"), "--app-uid", "alice"}, []string{"--app-uid", "NAME=UID"}},
		{[]string{"--listen", "127.0.0.1:0", "--app-uid", "alice=0"}, []string{"--app-uid", "Unix socket"}},
		{[]string{"--listen", "127.0.0.1:0", "--operator", "two words"}, []string{"--operator"}},
	} {
		_, stderr, code := runKord(t, append(slices.Clone(base), c.extra...)...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line", c.extra, code, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr %q does not name %q", c.extra, stderr, w)
			}
		}
	}
}

// TestCertsApps: kord certs --apps writes each application's certificate
// and key beside the parties', and refuses a bad name before writing.
func TestCertsApps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	out, stderr, code := runKord(t, "certs", "--dir", dir, "--apps", "operator,infer-1")
	if code != 0 || !strings.Contains(out, "application infer-1: --app-tls-cert") {
		t.Fatalf("exit %d, out %q, stderr %q", code, out, stderr)
	}
	for _, n := range []string{"operator", "infer-1"} {
		f := peertls.AppFiles(dir, n)
		if _, err := peertls.AppClientConfig(f, peertls.PartyName(0)); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	bad := filepath.Join(t.TempDir(), "d")
	if _, stderr, code := runKord(t, "certs", "--dir", bad, "--apps", "a b"); code != 2 || !strings.Contains(stderr, "--apps") {
		t.Fatalf("--apps 'a b': exit %d, %q", code, stderr)
	}
}
