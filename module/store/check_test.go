package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBoltRefusesUnsafeDirectory: a state file in a directory that group
// or others can write (who could replace or remove it) is refused before
// anything is created, with an error naming the directory and the fix.
func TestBoltRefusesUnsafeDirectory(t *testing.T) {
	for _, mode := range []os.FileMode{0o770, 0o707, 0o777, 0o1777} {
		dir := filepath.Join(t.TempDir(), "d")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, mode)
		path := filepath.Join(dir, "state.db")
		_, err := OpenBolt(path, 1)
		if !errors.Is(err, ErrPermissions) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "chmod go-w") {
			t.Fatalf("directory mode %v: %v; want ErrPermissions naming %s and chmod go-w", mode, err, dir)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("directory mode %v: a refused open created %s", mode, path)
		}
	}
	// 0755 and 0700 are fine.
	for _, mode := range []os.FileMode{0o755, 0o700, 0o750} {
		dir := t.TempDir()
		os.Chmod(dir, mode)
		b, err := OpenBolt(filepath.Join(dir, "state.db"), 1)
		if err != nil {
			t.Fatalf("directory mode %v: %v", mode, err)
		}
		b.Close()
	}
}

// TestBoltRefusesOtherOwner: a state file (or its directory) owned by
// another user is refused. Changing owners needs root; as another user
// the test says so and checks only the error for the mode.
func TestBoltRefusesOtherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot make a file owned by another uid here")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	b, err := OpenBolt(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	os.Chown(path, 4242, 4242)
	if _, err := OpenBolt(path, 1); !errors.Is(err, ErrPermissions) || !strings.Contains(err.Error(), "owned by uid 4242") || !strings.Contains(err.Error(), "chown") {
		t.Fatalf("file owned by uid 4242: %v", err)
	}
	os.Chown(path, 0, 0)
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o700)
	os.Chown(sub, 4242, 4242)
	if _, err := OpenBolt(filepath.Join(sub, "state.db"), 1); !errors.Is(err, ErrPermissions) || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("directory owned by uid 4242: %v", err)
	}
}

// TestBoltRefusesNonRegular: a directory or a FIFO at the state path is
// refused by the pre-check, not handed to bbolt.
func TestBoltRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o700)
	if _, err := OpenBolt(sub, 1); !errors.Is(err, ErrPermissions) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a directory as the state file: %v", err)
	}
}
