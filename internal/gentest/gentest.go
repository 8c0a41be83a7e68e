// Package gentest checks in a test that a generated file is what its
// generator writes now, so a hand edit of the output (or a generator
// change not run) fails the package's own tests, not only CI.
package gentest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Current runs `go run GEN -out TMP` in the test's package directory and
// compares TMP with file, the committed output. It skips the test when no
// go tool is in PATH (an installed test binary).
func Current(t testing.TB, gen, file string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool in PATH")
	}
	out := filepath.Join(t.TempDir(), filepath.Base(file))
	cmd := exec.Command(goTool, "run", gen, "-out", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run %s: %v\n%s", gen, err, msg)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what %s writes: run go generate in this package", file, gen)
	}
}

// WriteJSON writes v to path as indented JSON with a final newline: a
// known-answer file written afresh (a test's -update flag).
func WriteJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ReadJSON reads the known-answer file at path into a T.
func ReadJSON[T any](t testing.TB, path string) T {
	t.Helper()
	var v T
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
