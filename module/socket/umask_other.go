//go:build !unix

package socket

// withUmask runs f: there is no umask here; listen narrows the socket's
// mode right after f creates it.
func withUmask(_ int, f func()) { f() }
