package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// checkPath checks, before anything is opened, the state file's directory
// (owned by this user or root, not writable by group or others: nobody
// else may replace or remove the file) and the file itself if it exists
// (checkFile). The check that counts for the file is the one on the
// descriptor bbolt uses; this one gives a clear error first.
func checkPath(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("store: state file directory: %w", err)
	}
	me := os.Geteuid()
	if u := owner(st); u != me && u != 0 && u != -1 {
		return fmt.Errorf("%w: its directory %s is owned by uid %d; the module runs as uid %d, and the directory must be owned by it or root (chown %d %s)", ErrPermissions, dir, u, me, me, dir)
	}
	if p := st.Mode().Perm(); p&0o022 != 0 {
		return fmt.Errorf("%w: its directory %s is %v, writable by group or others, who could replace the state file (chmod go-w %s, or use a directory of the module's own, mode 0700)", ErrPermissions, dir, p, dir)
	}
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%w: %s is a symbolic link; give the file itself", ErrPermissions, path)
		}
		return checkFile(path, st)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// checkFile checks an existing state file: a regular file, owned by this
// user, with no access for group or others.
func checkFile(path string, st fs.FileInfo) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file (%v)", ErrPermissions, path, st.Mode().Type())
	}
	if p := st.Mode().Perm(); p&0o077 != 0 {
		return fmt.Errorf("%w: %s is %v, accessible to group or others; want 0600 (chmod 600 %s)", ErrPermissions, path, p, path)
	}
	me := os.Geteuid()
	if u := owner(st); u != me && u != -1 {
		return fmt.Errorf("%w: %s is owned by uid %d, but the module runs as uid %d (chown %d %s, or run the module as its owner)", ErrPermissions, path, u, me, me, path)
	}
	return nil
}
