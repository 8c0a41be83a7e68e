//go:build !unix

package provision

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// noFollow is 0 here: no O_NOFOLLOW (CreatePrivate's O_EXCL refuses an
// existing link all the same).
const noFollow = 0

// errSymlink marks a path that is a symbolic link.
var errSymlink = errors.New("is a symbolic link")

// openNoFollow opens path for reading, refusing a symbolic link. Without
// O_NOFOLLOW the check is on the path before the open, not on the open
// itself.
func openNoFollow(path string) (*os.File, error) {
	if st, err := os.Lstat(path); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s: %w", path, errSymlink)
	}
	return os.Open(path)
}

// isSymlinkErr reports whether openNoFollow failed on a symbolic link.
func isSymlinkErr(err error) bool { return errors.Is(err, errSymlink) }

// Owner does not know file owners here (no uid): false.
func Owner(os.FileInfo) (int, bool) { return 0, false }
