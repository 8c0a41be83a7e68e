// Package prgtest holds the test helper that runs a test once per PRG
// kernel, for the packages above internal/prg (internal/prg's own tests
// use prg.EachKernel directly: they cannot import this package).
package prgtest

import (
	"testing"

	"github.com/kord-fss/kord/internal/prg"
)

// Run runs f as a subtest of t for each kernel this machine can run,
// fastest first, named after the kernel and with it in use, and then
// restores the kernel that was in use. f must not call t.Parallel: the
// kernel is a process-wide setting.
func Run(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	prg.EachKernel(func(name string) { t.Run(name, f) })
}
