package socket

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/kord-fss/kord/module/moduletest"
)

// TestServeEndsWithHostConnected: a host keeps its connections open for
// as long as it runs; once the listener closes, Serve ends them and
// returns instead of waiting for the host, and the host's next call fails
// as a transport error (the module is gone), not as an answer.
func TestServeEndsWithHostConnected(t *testing.T) {
	dir := t.TempDir()
	d, st := moduletest.OpenDurable(t, 0, filepath.Join(dir, "m0.db"), 0, secret)
	defer st.Close()
	path := filepath.Join(dir, "s0")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- NewServer(d, ServerOptions{Access: Access{SameUID: true}}).Serve(l) }()
	c := Dial(path, 0)
	defer c.Close()
	ctx := context.Background()
	// The call leaves its connection open, idle in the client's pool.
	if _, err := c.Poll(ctx, nil); err != nil {
		t.Fatal(err)
	}
	l.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(DrainTimeout + time.Minute): // a hang, not a speed bound
		t.Fatal("Serve still waits for the host's connection")
	}
	if _, err := c.Poll(ctx, nil); !errors.Is(err, ErrTransport) {
		t.Fatalf("a call after the module stopped: %v, want a transport error", err)
	}
}
