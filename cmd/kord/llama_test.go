package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kord-fss/kord/internal/cluster"
	"github.com/kord-fss/kord/internal/llamaexport"
)

// TestLlamaExportDaemons: `kord llama export` against two real party
// daemons (child processes, modules in their processes, loopback TCP):
// the exported keys reconstruct with the exported shares, and `kord llama
// verify` agrees; a truncated .dat is refused with a clear error.
func TestLlamaExportDaemons(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, t.TempDir(), cluster.Options{Bin: kordBin, PeerPlaintext: true, InProcessModules: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir := filepath.Join(t.TempDir(), "out")
	_, errOut, code := runKord(t, "llama", "export", "--dir", dir, "--keys", "600", "--in-bits", "32", "--out-bits", "32", "--beta", "5",
		"--party0", c.Party(0).Ready["app"], "--party1", c.Party(1).Ready["app"])
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
