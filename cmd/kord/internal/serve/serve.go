// Package serve runs the kord daemons once their flags are checked:
// Party serves a party's host (kord party), Module a module process
// (kord module). cmd/kord validates the flags, fills a config and calls
// one of them. It is a package of its own, not part of internal/daemon,
// because the party imports package service, whose tests import
// internal/daemon.
package serve

import (
	"context"
	"io"
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
