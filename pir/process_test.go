package pir

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProcesses builds the kord binary, writes a database with `kord pir
// mkdb`, starts two `kord pir serve` processes on 127.0.0.1 and retrieves
// records with `kord pir query`.
func TestProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kord binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "kord")
	build := exec.Command("go", "build", "-o", bin, "github.com/kord-fss/kord/cmd/kord")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dbPath := filepath.Join(dir, "db.kpir")
	out, err := exec.Command(bin, "pir", "mkdb", "--out", dbPath, "--records", "5000", "--record-size", "40", "--seed", "7").Output()
	if err != nil {
		t.Fatalf("mkdb: %v", err)
	}
	db, err := Open(dbPath, true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if strings.TrimSpace(string(out)) != db.HashHex() {
		t.Fatalf("mkdb printed %q, file hash is %s", out, db.HashHex())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addrs := make([]string, 2)
	for i := range addrs {
		cmd := exec.CommandContext(ctx, bin, "pir", "serve", "--db", dbPath, "--listen", "127.0.0.1:0", "--workers", "1")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			t.Fatalf("server %d: %v", i, err)
		}
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
		if !ok {
			t.Fatalf("server %d printed %q", i, line)
		}
		addrs[i] = addr
	}
	servers := addrs[0] + "," + addrs[1]
	idx := []int{0, 4999, 1234}
	q := exec.CommandContext(ctx, bin, "pir", "query", "--servers", servers, "--index", "0,4999", "--index", "1234", "--expect-hash", db.HashHex())
	var stderr bytes.Buffer
	q.Stderr = &stderr
	out, err = q.Output()
	if err != nil {
		t.Fatalf("query: %v: %s", err, stderr.String())
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(idx) {
		t.Fatalf("query printed %d lines: %q", len(lines), out)
	}
	for j, i := range idx {
		if lines[j] != hex.EncodeToString(db.Record(i)) {
			t.Fatalf("record %d: got %s", i, lines[j])
		}
	}
	// An index out of range is bad input (exit 2); a different expected
	// hash is an error (exit 1).
	exitCode := func(args ...string) int {
		err := exec.CommandContext(ctx, bin, args...).Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	}
	if c := exitCode("pir", "query", "--servers", servers, "--index", "5000"); c != 2 {
		t.Fatalf("out-of-range index: exit %d, want 2", c)
	}
	if c := exitCode("pir", "query", "--servers", servers, "--index", "1", "--expect-hash", strings.Repeat("ab", 32)); c != 1 {
		t.Fatalf("wrong expected hash: exit %d, want 1", c)
	}
	if c := exitCode("pir", "serve", "--db", filepath.Join(dir, "missing")); c != 2 {
		t.Fatalf("missing database: exit %d, want 2", c)
	}
}
