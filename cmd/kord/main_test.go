package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
)

// kordBin is the kord binary built once for the CLI tests in this package;
// tests run it as a real process to check output and exit status.
var kordBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kord-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kordBin = filepath.Join(dir, "kord")
	build := exec.Command("go", "build", "-o", kordBin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building kord:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runKord runs the kord binary and returns its stdout, stderr and exit code.
func runKord(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(kordBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("running kord %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// startCluster starts the two sites' kord processes (kordBin) in dir under
// a two-minute context; the test's end stops them.
func startCluster(t *testing.T, dir string, o cluster.Options) (context.Context, *cluster.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	o.Bin = kordBin
	c, err := cluster.Start(ctx, dir, o)
	if err != nil {
		t.Fatalf("cluster %+v: %v", o, err)
	}
	t.Cleanup(c.Close)
	return ctx, c
}
