//go:build unix

package socket

import "syscall"

// withUmask runs f with the process's umask set to mask, so that the
// socket file f creates is never, even for a moment, open to others.
func withUmask(mask int, f func()) {
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	f()
}
