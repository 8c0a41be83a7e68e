package provision

import "golang.org/x/sys/unix"

// Undumpable marks this process not dumpable (prctl PR_SET_DUMPABLE 0):
// no core dumps, and processes under the same uid without CAP_SYS_PTRACE
// can no longer attach to it or read its memory through /proc. It does
// not help against root. It reports whether this OS has such a switch.
func Undumpable() (bool, error) {
	return true, unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
