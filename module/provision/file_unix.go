//go:build unix

package provision

import (
	"errors"
	"os"
	"syscall"
)

// noFollow makes an open fail on a symbolic link.
const noFollow = syscall.O_NOFOLLOW

// openNoFollow opens path for reading without following a symbolic link
// (and without blocking on a FIFO).
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|noFollow|syscall.O_NONBLOCK, 0)
}

// isSymlinkErr reports whether openNoFollow failed on a symbolic link.
func isSymlinkErr(err error) bool { return errors.Is(err, syscall.ELOOP) }

// Owner returns the uid that owns the file st describes.
func Owner(st os.FileInfo) (int, bool) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid), true
	}
	return 0, false
}
