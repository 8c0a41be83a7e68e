package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/cmd/kord/internal/loadgen"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/peertls"
	"github.com/kord-fss/kord/module/msg"
)

func tlsArgs(f peertls.Files) []string {
	return []string{"--tls-cert", f.Cert, "--tls-key", f.Key, "--tls-ca", f.CA}
}

// TestPartyNeedsPeerTLS: a party started without peer-link TLS material
// and without --peer-plaintext refuses to start (exit 2, one line naming
// both ways out), as does one given both, or part of the TLS material;
// none of them opens its ports or its module.
func TestPartyNeedsPeerTLS(t *testing.T) {
	dir := t.TempDir()
	if err := peertls.Init(filepath.Join(dir, "tls"), 0); err != nil {
		t.Fatal(err)
	}
	f := peertls.PartyFiles(filepath.Join(dir, "tls"), 0)
	base := []string{"party", "--party", "0", "--module", filepath.Join(dir, "m.sock"), "--listen", "127.0.0.1:0", "--peer", "127.0.0.1:1"}
	for _, c := range []struct {
		extra []string
		want  []string
	}{
		{nil, []string{"--tls-cert", "--tls-key", "--tls-ca", "--peer-plaintext", "kord certs"}},
		{append(tlsArgs(f), "--peer-plaintext"), []string{"--peer-plaintext", "exclude"}},
		{[]string{"--tls-peer-name", "x", "--peer-plaintext"}, []string{"--peer-plaintext", "exclude"}},
		{[]string{"--tls-cert", f.Cert, "--tls-key", f.Key}, []string{"go together"}},
		{[]string{"--tls-cert", f.Cert, "--tls-key", f.Cert, "--tls-ca", f.CA}, []string{"--tls-key", f.Cert}},
		{[]string{"--tls-cert", f.Cert, "--tls-key", f.Key, "--tls-ca", f.Key}, []string{"no PEM certificate", f.Key}},
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

// TestPeerLinkTLS: two party processes started by the cluster supervisor
// (mutual TLS by default, certificates made by peertls.Init) pair their
// modules and deliver verified keys; party 1's peer port speaks TLS 1.3
// as kord-party-1 and refuses a client without a certificate.
func TestPeerLinkTLS(t *testing.T) {
	dir := t.TempDir()
	ctx, c := startCluster(t, dir, cluster.Options{Batch: 32})
	rng := mrand.New(mrand.NewPCG(1, 2))
	for _, k := range []loadgen.Class{{Mode: msg.Bound, Tier: msg.Keystream, Type: fss.DPF, InBits: 16, OutBits: 16}, {Mode: msg.Bound, Tier: msg.MAC, Type: fss.DCF, InBits: 32, OutBits: 32}} {
		reqs, truth := loadgen.Requests(k, uint64(1+len(k.Tier.String())*1000), 100, rng)
		reps, _, err := loadgen.Stream(ctx, c.Apps(), reqs)
		if err != nil {
			t.Fatalf("%s over TLS: %v", k.Name(), err)
		}
		for i, tr := range truth {
			if ok, bad := loadgen.Verify(k, tr, reps[0][i], reps[1][i], rng); ok != 1 || bad != 0 {
				t.Fatalf("%s over TLS: request %d did not verify", k.Name(), i)
			}
		}
	}

	// Dial party 1's peer port as a client that trusts the CA but has no
	// certificate of its own.
	ca, err := os.ReadFile(filepath.Join(dir, "tls", peertls.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	conn, err := tls.Dial("tcp", c.Party(1).Ready["peer"], &tls.Config{RootCAs: pool, ServerName: peertls.PartyName(1), MinVersion: tls.VersionTLS13, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatalf("TLS handshake with party 1's peer port: %v", err)
	}
	defer conn.Close()
	if v := conn.ConnectionState().Version; v != tls.VersionTLS13 {
		t.Fatalf("party 1's peer port negotiated TLS version %x", v)
	}
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
	if _, err := conn.Read(make([]byte, 1)); err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Fatalf("party 1 served a client without a certificate (read: %v)", err)
	}
}

// TestPeerLinkTLSRefused: a party whose certificate comes from another
// CA, or from the right CA for the wrong party, cannot reach its peer: the
// modules do not pair.
func TestPeerLinkTLSRefused(t *testing.T) {
	certs := t.TempDir()
	good, rogue := filepath.Join(certs, "good"), filepath.Join(certs, "rogue")
	for _, d := range []string{good, rogue} {
		if err := peertls.Init(d, 0); err != nil {
			t.Fatal(err)
		}
	}
	g0, g1, r0, r1 := peertls.PartyFiles(good, 0), peertls.PartyFiles(good, 1), peertls.PartyFiles(rogue, 0), peertls.PartyFiles(rogue, 1)
	r0.CA, r1.CA = g0.CA, g1.CA // a certificate of another CA, trusting the right one
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for _, c := range []struct {
		name string
		args [2][]string
		who  int    // the party that refuses the other's certificate (-1: refused at start)
		why  string // and why ("" = accepted)
	}{
		{"party 0's certificate from another CA", [2][]string{tlsArgs(r0), tlsArgs(g1)}, 1, "signed by unknown authority"},
		{"party 1's certificate from another CA", [2][]string{tlsArgs(g0), tlsArgs(r1)}, 0, "signed by unknown authority"},
		// The right CA, the wrong identity: party 0 presents party 1's
		// certificate and key, or party 1 party 0's. Each party checks
		// its own certificate at start and refuses (who -1).
		{"party 0 presents kord-party-1", [2][]string{tlsArgs(g1), tlsArgs(g1)}, -1, "party0 did not start"},
		{"party 1 presents kord-party-0", [2][]string{tlsArgs(g0), tlsArgs(g0)}, -1, "party1 did not start"},
		// Told with --tls-name that the peer requires another name, a
		// party starts; the peer refuses it by its own rule.
		{"party 0 presents kord-party-1, named", [2][]string{append(tlsArgs(g1), "--tls-name", peertls.PartyName(1)), tlsArgs(g1)}, 1, "not for kord-party-0"},
		// The same, accepted when the peer name says so: the flag is
		// what pins the identity.
		{"party 1 expects kord-party-1", [2][]string{append(tlsArgs(g1), "--tls-name", peertls.PartyName(1)), append(tlsArgs(g1), "--tls-peer-name", peertls.PartyName(1))}, 0, ""},
	} {
		accept := c.why == ""
		pctx, pcancel := context.WithTimeout(ctx, 40*time.Second)
		dir := t.TempDir()
		cl, err := cluster.Start(pctx, dir, cluster.Options{Bin: kordBin, OwnPeerTLS: true, PartyArgs: c.args})
		pcancel()
		if err == nil {
			cl.Close()
		}
		switch {
		case accept && err != nil:
			t.Fatalf("%s: %v", c.name, err)
		case !accept && err == nil:
			t.Fatalf("%s: the parties paired", c.name)
		case !accept && c.who == -1 && (!strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), "--tls-name")):
			t.Fatalf("%s: want a refusal at start naming --tls-name: %v", c.name, err)
		case !accept && c.who == 0 && !strings.Contains(err.Error(), c.why):
			t.Fatalf("%s: refused, but not for %q: %v", c.name, c.why, err)
		case !accept && c.who == 1:
			// Party 0 sees an alert or a dropped connection; party 1
			// logs the reason.
			log, _ := os.ReadFile(filepath.Join(dir, "party1.log"))
			if !strings.Contains(string(log), "TLS handshake refused") || !strings.Contains(string(log), c.why) {
				t.Fatalf("%s: refused (%v), but party 1's log does not say why (want %q):\n%s", c.name, err, c.why, log)
			}
		}
	}
}

// TestCertsCommand: kord certs writes a CA certificate and both parties'
// certificates and keys (keys 0600) and prints the flags each party takes;
// parties started with them pair; a second run into the same directory
// overwrites nothing.
func TestCertsCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	out, stderr, code := runKord(t, "certs", "--dir", dir)
	if code != 0 {
		t.Fatalf("kord certs: exit %d: %s", code, stderr)
	}
	var args [2][]string
	for b := 0; b < 2; b++ {
		f := peertls.PartyFiles(dir, b)
		if !strings.Contains(out, strings.Join(tlsArgs(f), " ")) {
			t.Errorf("kord certs output does not give party %d's flags:\n%s", b, out)
		}
		fi, err := os.Stat(f.Key)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", f.Key, fi.Mode().Perm())
		}
		args[b] = tlsArgs(f)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 5 {
		t.Errorf("kord certs wrote %d files, want 5 (no CA key)", len(ents))
	}
	before, _ := os.ReadFile(filepath.Join(dir, peertls.CAFile))
	if _, stderr, code := runKord(t, "certs", "--dir", dir); code == 0 || !strings.Contains(stderr, "already exists") {
		t.Errorf("second kord certs: exit %d, %s", code, stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, peertls.CAFile)); string(after) != string(before) {
		t.Error("the second kord certs replaced ca.crt")
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, t.TempDir(), cluster.Options{Bin: kordBin, OwnPeerTLS: true, PartyArgs: args})
	if err != nil {
		t.Fatalf("parties with kord certs' files: %v", err)
	}
	c.Close()
}
