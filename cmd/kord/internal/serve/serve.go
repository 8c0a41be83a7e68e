// Package serve runs the kord daemons once their flags are checked:
// Party serves a party's host (kord party), Module a module process
// (kord module). cmd/kord validates the flags, fills a config and calls
// one of them. It is a package of its own, not part of internal/daemon,
// because the party imports package service, whose tests import
// internal/daemon.
package serve

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"syscall"
)

// signalContext is ctx, also cancelled on SIGINT or SIGTERM.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// stdout is w, or os.Stdout when w is nil.
func stdout(w io.Writer) io.Writer {
	if w == nil {
		return os.Stdout
	}
	return w
}

// undoNewState notes whether the state file at path exists; the function
// it returns removes the file if it did not and *ready is still false, so
// that a start that fails before the daemon says ready leaves no state
// file of its making. Defer it before the state file is opened (it must
// run after the file is closed).
func undoNewState(path string, ready *bool) func() {
	_, err := os.Lstat(path)
	fresh := path != "" && errors.Is(err, fs.ErrNotExist)
	return func() {
		if fresh && !*ready {
			os.Remove(path)
		}
	}
}
