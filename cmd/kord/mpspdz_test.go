package main

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/mpspdz"
)

// verifyJSON runs kord mpspdz verify --json on dir and wants every file's
// relations checked.
func verifyJSON(t *testing.T, dir string, files int) {
	t.Helper()
	out, errOut, code := runKord(t, "mpspdz", "verify", "--dir", dir, "--json")
	var rep verifyReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || !rep.OK || len(rep.Files) != files {
		t.Fatalf("verify %s: exit %d\n%s\n%s", dir, code, out, errOut)
	}
	for _, f := range rep.Files {
		if !f.Checked {
			t.Fatalf("verify %s: %s not checked", dir, f.File)
		}
	}
}

// TestMpspdzThroughDaemons: kord mpspdz export through two real party
// daemons (and two module daemons) writes semi2k files that kord mpspdz
// verify accepts — both players' files from one export, and each player's
// from its own site's daemon alone (--player), as two sites would; an
// existing file is refused; a changed share is found, naming the file and
// the tuple.
func TestMpspdzThroughDaemons(t *testing.T) {
	_, c := startCluster(t, t.TempDir(), cluster.Options{})
	a0, a1 := c.AppAddr(0), c.AppAddr(1)
	tuples := []string{"--triples", "3000", "--squares", "200", "--bits", "700", "--matrix", "2x3x4:3", "--matrix", "1x1x5:2", "--chunk", "1000"}
	// The application API runs TLS: one application certificate for both
	// parties, each party's server name by default (--app-server-name
	// only where one site is asked).
	creds := c.AppArgs(0)
	if len(creds) == 8 {
		tuples = append(tuples, creds[:6]...)
	}

	both := filepath.Join(t.TempDir(), "pd")
	out, errOut, code := runKord(t, append([]string{"mpspdz", "export", "--dir", both, "--party0", a0, "--party1", a1}, tuples...)...)
	if code != 0 || !strings.Contains(out, "Triples-DR-P1: 3000 Triples tuples") || !strings.Contains(out, "Matrix-2x3x4-P0: 3 Matrix-2x3x4 tuples") {
		t.Fatalf("export: exit %d\n%s\n%s", code, out, errOut)
	}
	verifyJSON(t, both, 10)

	// Each site writes its own player's files from its own daemon.
	sites := filepath.Join(t.TempDir(), "pd")
	var wg sync.WaitGroup
	var res [2]struct {
		out, err string
		code     int
	}
	for p, addr := range []string{a0, a1} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append([]string{"mpspdz", "export", "--dir", sites, "--player", string(rune('0' + p)), "--party" + string(rune('0'+p)), addr}, tuples...)
			if a := c.AppArgs(p); len(a) == 8 {
				args = append(args, a[6:]...)
			}
			res[p].out, res[p].err, res[p].code = runKord(t, args...)
		}()
	}
	wg.Wait()
	for p, r := range res {
		if r.code != 0 || strings.Contains(r.out, "-P"+string(rune('1'-p))+":") {
			t.Fatalf("site %d export: exit %d\n%s\n%s", p, r.code, r.out, r.err)
		}
	}
	verifyJSON(t, sites, 10)

	if _, errOut, code := runKord(t, append([]string{"mpspdz", "export", "--dir", both, "--party0", a0, "--party1", a1}, tuples...)...); code == 0 || !strings.Contains(errOut, "--force") {
		t.Fatalf("overwrite: exit %d %s", code, errOut)
	}
	if _, errOut, code := runKord(t, "mpspdz", "export", "--dir", t.TempDir(), "--player", "1", "--party0", a0, "--bits", "5"); code != 2 || !strings.Contains(errOut, "--party1") {
		t.Fatalf("--player 1 without --party1: exit %d %s", code, errOut)
	}

	path := mpspdz.Path(both, mpspdz.Triples, 0)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := mpspdz.HeaderSize + 8*(3*2024+2)
	binary.LittleEndian.PutUint64(b[off:], binary.LittleEndian.Uint64(b[off:])^1)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runKord(t, "mpspdz", "verify", "--dir", both); code == 0 || !strings.Contains(errOut, "Triples-DR-P0") || !strings.Contains(errOut, "tuple 2024:") {
		t.Fatalf("tampered: exit %d %s", code, errOut)
	}
}

// TestMpspdzBench: the benchmark's report is complete and both outputs
// verified (figures, not thresholds).
func TestMpspdzBench(t *testing.T) {
	out, errOut, code := runKord(t, "mpspdz", "bench", "--triples", "5000", "--squares", "100", "--bits", "1000", "--matrix", "4x4x4:5", "--json")
	var rep struct {
		Tuples            int     `json:"tuples"`
		Daemon            float64 `json:"daemon_tuples_per_sec"`
		Dealer            float64 `json:"dealer_tuples_per_sec"`
		PeerBytesPerTuple float64 `json:"peer_bytes_per_tuple"`
		Verified          bool    `json:"verified"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || !rep.Verified || rep.Tuples != 6105 || rep.Daemon <= 0 || rep.Dealer <= 0 || rep.PeerBytesPerTuple <= 0 {
		t.Fatalf("bench: exit %d %+v\n%s\n%s", code, rep, out, errOut)
	}
}

// TestMpspdzBadInput: bad flags exit 2 with the flag named, and write
// nothing.
func TestMpspdzBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "--dir", dir}, "nothing to export"},
		{[]string{"export", "--dir", dir, "--triples", "-1"}, "--triples"},
		{[]string{"export", "--dir", dir, "--matrix", "2x3:4"}, "--matrix"},
		{[]string{"export", "--dir", dir, "--matrix", "2x3x4:0"}, "--matrix"},
		{[]string{"export", "--dir", dir, "--bits", "3", "--player", "2", "--party0", "x"}, "--player"},
		{[]string{"export", "--dir", dir, "--bits", "3", "--player", "0"}, "--party0"},
		{[]string{"export", "--dir", dir, "--bits", "3", "--party0", "127.0.0.1:1"}, "--party1"},
		{[]string{"export", "--dir", dir, "--bits", "3", "--chunk", "0"}, "--chunk"},
		{[]string{"export", "--bits", "3"}, "dir"},
	} {
		_, errOut, code := runKord(t, append([]string{"mpspdz"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("kord mpspdz %v: exit %d, %q (want %q)", c.args, code, errOut, c.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("refused exports wrote %d entries", len(ents))
	}
	if _, errOut, code := runKord(t, "mpspdz", "verify", "--dir", dir); code == 0 || !strings.Contains(errOut, "2-DR-64") {
		t.Fatalf("verify of an empty dir: exit %d %q", code, errOut)
	}
}
