package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/cmd/kord/internal/llamaexport"
	"github.com/kord-fss/kord/cmd/kord/internal/llamagates"
	"github.com/kord-fss/kord/fss/llama"
)

// TestLlamaExportDaemons: `kord llama export` against two real party
// daemons (child processes, modules in their processes, loopback TCP):
// the exported keys reconstruct with the exported shares, and `kord llama
// verify` agrees, for one payload element and for a payload vector; a
// truncated .dat is refused with a clear error.
func TestLlamaExportDaemons(t *testing.T) {
	// The parties' application API on TLS, as the cluster runs it with
	// the peer link's TLS: export dials as the cluster's application.
	_, c := startCluster(t, t.TempDir(), cluster.Options{InProcessModules: true})
	dir := filepath.Join(t.TempDir(), "out")
	af := c.AppTLS(0)
	_, errOut, code := runKord(t, "llama", "export", "--dir", dir, "--keys", "600", "--in-bits", "32", "--out-bits", "32", "--beta", "5",
		"--party0", c.Party(0).Ready["app"], "--party1", c.Party(1).Ready["app"],
		"--app-tls-cert", af.Cert, "--app-tls-key", af.Key, "--app-ca", af.CA)
	if code != 0 {
		t.Fatalf("kord llama export: exit %d\n%s", code, errOut)
	}
	e, err := llamaexport.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if e.Params.Keys != 600 {
		t.Fatalf("params %+v", e.Params)
	}
	if err := e.Verify(5); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runKord(t, "llama", "verify", "--dir", dir, "--beta", "5"); code != 0 || !strings.Contains(out, "600 key pairs") {
		t.Fatalf("kord llama verify: exit %d\n%s%s", code, out, errOut)
	}
	// A payload vector from the same daemons.
	vdir := filepath.Join(t.TempDir(), "vec")
	if _, errOut, code := runKord(t, "llama", "export", "--dir", vdir, "--keys", "50", "--in-bits", "20", "--out-bits", "16", "--beta", "3,0xffff,0",
		"--party0", c.Party(0).Ready["app"], "--party1", c.Party(1).Ready["app"],
		"--app-tls-cert", af.Cert, "--app-tls-key", af.Key, "--app-ca", af.CA); code != 0 {
		t.Fatalf("kord llama export --beta 3,0xffff,0: exit %d\n%s", code, errOut)
	}
	if out, errOut, code := runKord(t, "llama", "verify", "--dir", vdir, "--beta", "3,65535,0"); code != 0 || !strings.Contains(out, "50 key pairs") {
		t.Fatalf("kord llama verify of the vector export: exit %d\n%s%s", code, out, errOut)
	}
	server := filepath.Join(dir, "server.dat")
	data, _ := os.ReadFile(server)
	if err := os.WriteFile(server, data[:len(data)-16], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runKord(t, "llama", "verify", "--dir", dir); code != 2 || !strings.Contains(errOut, "server.dat is") {
		t.Fatalf("verify of a short server.dat: exit %d\n%s", code, errOut)
	}
}

// TestLlamaExportBadInput: the export names the flag it refuses.
func TestLlamaExportBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--keys", "1", "--in-bits", "8", "--out-bits", "8"}, "dir"},
		{[]string{"--dir", "x", "--keys", "1", "--in-bits", "0", "--out-bits", "8"}, "in-bits"},
		{[]string{"--dir", "x", "--keys", "1", "--in-bits", "8", "--out-bits", "65"}, "--out-bits"},
		{[]string{"--dir", "x", "--keys", "1", "--in-bits", "8", "--out-bits", "8", "--beta", "256"}, "--beta"},
		{[]string{"--dir", "x", "--keys", "1", "--in-bits", "8", "--out-bits", "8", "--party0", "a:1"}, "party0/party1"},
	} {
		_, errOut, code := runKord(t, append([]string{"llama", "export"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 naming %q", c.args, code, errOut, c.want)
		}
	}
}

// TestLlamaExportInProcess: without party addresses the export comes from
// an in-process module pair, and reads back and verifies.
func TestLlamaExportInProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	out, errOut, code := runKord(t, "llama", "export", "--dir", dir, "--keys", "50", "--in-bits", "24", "--out-bits", "16", "--beta", "0x1234")
	if code != 0 || !strings.Contains(out, "in-process module pair") {
		t.Fatalf("kord llama export: exit %d\n%s%s", code, out, errOut)
	}
	e, err := llamaexport.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Verify(0x1234); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runKord(t, "llama", "verify", "--dir", dir, "--beta", "0x1235"); code == 0 {
		t.Fatalf("verify with another β passed\n%s", errOut)
	}
}

// TestLlamaExportVector: `kord llama export --beta B1,B2,...` writes keys
// with a payload vector (group in params.json) from an in-process module
// pair; `kord llama verify` checks them against that vector only, and
// names a vector of the wrong length or a bad element.
func TestLlamaExportVector(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	out, errOut, code := runKord(t, "llama", "export", "--dir", dir, "--keys", "20", "--in-bits", "12", "--out-bits", "10", "--beta", "1,0x3ff,0,7")
	if code != 0 {
		t.Fatalf("kord llama export: exit %d\n%s%s", code, out, errOut)
	}
	e, err := llamaexport.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if e.Params.Group != 4 || e.Params.Keys != 20 {
		t.Fatalf("params %+v", e.Params)
	}
	if err := e.VerifyVec([]uint64{1, 0x3ff, 0, 7}); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runKord(t, "llama", "verify", "--dir", dir, "--beta", "1,1023,0,7"); code != 0 || !strings.Contains(out, "20 key pairs") {
		t.Fatalf("kord llama verify: exit %d\n%s%s", code, out, errOut)
	}
	if _, _, code := runKord(t, "llama", "verify", "--dir", dir, "--beta", "1,1023,0,8"); code == 0 {
		t.Fatal("verify with another last element passed")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"llama", "verify", "--dir", dir, "--beta", "1,1023"}, "group (params.json) is 4"},
		{[]string{"llama", "verify", "--dir", dir, "--beta", "1,1024,0,7"}, "--beta element 1"},
		{[]string{"llama", "export", "--dir", dir, "--keys", "1", "--in-bits", "8", "--out-bits", "8", "--beta", "1,256"}, "--beta element 1"},
		{[]string{"llama", "export", "--dir", dir, "--keys", "1", "--in-bits", "8", "--out-bits", "8", "--beta", strings.Repeat("1,", 64) + "1"}, "65 payload elements"},
	} {
		if _, errOut, code := runKord(t, c.args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 naming %q", c.args, code, errOut, c.want)
		}
	}
}

// TestLlamaGatesDaemons: `kord llama gates` through two real party
// daemons (child processes, loopback TCP) writes a directory that `kord
// llama verify` accepts, byte-identical to kord's in-process dealer for
// the roots, masks and splits it holds; without addresses it uses an
// in-process module pair; bad flags are refused naming the flag.
func TestLlamaGatesDaemons(t *testing.T) {
	// The parties' application API on TLS (the cluster runs it with the
	// peer link's TLS): gates dials as the cluster's application.
	_, c := startCluster(t, t.TempDir(), cluster.Options{InProcessModules: true})
	af := c.AppTLS(0)
	dir := filepath.Join(t.TempDir(), "gates")
	out, errOut, code := runKord(t, "llama", "gates", "--dir", dir, "--bits", "16", "--relu", "30", "--ars", "20", "--shift", "5", "--maxpool", "10",
		"--party0", c.Party(0).Ready["app"], "--party1", c.Party(1).Ready["app"],
		"--app-tls-cert", af.Cert, "--app-tls-key", af.Key, "--app-ca", af.CA)
	if code != 0 || !strings.Contains(out, "wrote 60 llama gate packs") {
		t.Fatalf("kord llama gates: exit %d\n%s%s", code, out, errOut)
	}
	f, err := llamagates.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Runs() {
		if err := llama.RedealGates(r); err != nil {
			t.Fatal(err)
		}
	}
	if out, errOut, code := runKord(t, "llama", "verify", "--dir", dir); code != 0 || !strings.Contains(out, "30 ReLU, 20 ARS (shift 5) and 10 MaxPool") {
		t.Fatalf("kord llama verify: exit %d\n%s%s", code, out, errOut)
	}
	local := filepath.Join(t.TempDir(), "local")
	if out, errOut, code := runKord(t, "llama", "gates", "--dir", local, "--bits", "64", "--relu", "3", "--ars", "2", "--shift", "63", "--maxpool", "2"); code != 0 || !strings.Contains(out, "in-process module pair") {
		t.Fatalf("kord llama gates (in process): exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := runKord(t, "llama", "verify", "--dir", local); code != 0 {
		t.Fatalf("kord llama verify: exit %d\n%s%s", code, out, errOut)
	}
	// A pack cut short is refused naming the file.
	dat, _ := os.ReadFile(filepath.Join(dir, "client.dat"))
	os.WriteFile(filepath.Join(dir, "client.dat"), dat[:len(dat)-3], 0o600)
	if _, errOut, code := runKord(t, "llama", "verify", "--dir", dir); code != 2 || !strings.Contains(errOut, "client.dat is") {
		t.Fatalf("verify of a short client.dat: exit %d\n%s", code, errOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--bits", "7", "--relu", "1"}, "--bits"},
		{[]string{"--bits", "16", "--ars", "1", "--shift", "16"}, "--shift"},
		{[]string{"--bits", "16", "--ars", "1"}, "--shift"},
		{[]string{"--bits", "16"}, "no packs"},
		{[]string{"--bits", "16", "--relu", "1", "--party0", "127.0.0.1:1"}, "--party0/--party1"},
	} {
		_, errOut, code := runKord(t, append([]string{"llama", "gates", "--dir", filepath.Join(t.TempDir(), "bad")}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %s; want 2 naming %s", c.args, code, errOut, c.want)
		}
	}
}
