package provision

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrFileAccess marks a secret file that others could read or replace.
var ErrFileAccess = errors.New("provision: secret file is not private to this user")

// maxFile bounds what ReadPrivate reads: secret files are a line.
const maxFile = 4096

// ReadPrivate reads a small secret file, opening it once, without
// following a symbolic link, and checking the opened file (not the path):
// a regular file owned by this process's effective uid, with no access for
// group or others (mode 0600 or 0400). what names the file in errors
// (e.g. "--secret-file"). The caller should clear the result.
func ReadPrivate(what, path string) ([]byte, error) {
	f, err := openNoFollow(path)
	if err != nil {
		if isSymlinkErr(err) {
			return nil, fmt.Errorf("%w: %s %s is a symbolic link; give the file itself", ErrFileAccess, what, path)
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s %s is not a regular file (%v)", ErrFileAccess, what, path, st.Mode().Type())
	}
	if p := st.Mode().Perm(); p&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s %s is %v; it must be readable by its owner only (chmod 600 %s)", ErrFileAccess, what, path, p, path)
	}
	if uid, ok := Owner(st); ok && uid != os.Geteuid() {
		return nil, fmt.Errorf("%w: %s %s is owned by uid %d, but the module runs as uid %d (chown %d %s)", ErrFileAccess, what, path, uid, os.Geteuid(), os.Geteuid(), path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		clear(b)
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(b) > maxFile {
		clear(b)
		return nil, fmt.Errorf("%s %s is over %d bytes: not a secret file", what, path, maxFile)
	}
	return b, nil
}

// CreatePrivate creates path as a new file of mode 0600, open for
// writing. It never follows a symbolic link, and fails with an error that
// matches os.ErrExist when the path exists.
func CreatePrivate(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
}

// ReadSecretFile reads and parses a provisioning secret file.
func ReadSecretFile(path string) ([]byte, error) { return ReadParsed("--secret-file", path, Parse) }

// ReadParsed reads the private file at path (ReadPrivate; flag names it
// in errors) and returns what parse makes of its bytes, which it wipes.
func ReadParsed(flag, path string, parse func([]byte) ([]byte, error)) ([]byte, error) {
	b, err := ReadPrivate(flag, path)
	if err != nil {
		return nil, err
	}
	defer clear(b)
	s, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return s, nil
}
