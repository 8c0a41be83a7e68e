//go:build !linux

package provision

// Undumpable does nothing here: this OS has no PR_SET_DUMPABLE (run the
// module under its own user, which keeps other users from tracing it).
func Undumpable() (bool, error) { return false, nil }
