//go:build unix

package store

import (
	"io/fs"
	"syscall"
)

// owner returns the uid that owns the file st describes (-1 if unknown).
func owner(st fs.FileInfo) int {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid)
	}
	return -1
}

// noFollow makes an open fail on a symbolic link.
const noFollow = syscall.O_NOFOLLOW
