package socket

import (
	"context"
	"net"
	"sync"
	"time"
)

// DrainTimeout bounds how long a stopping server waits for the requests
// its connections are running: past it their context is cancelled and the
// connections are closed, so a module stops well within the 10 s an
// operator (or a chart's termination grace period) gives it.
const DrainTimeout = 5 * time.Second

// openConns tracks a server's open connections so that Serve can end
// them once its listener is closed: a host keeps its connections open for
// as long as it runs, so waiting for it to close them would never end.
type openConns struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	ctx    context.Context // the requests' context, cancelled past DrainTimeout
	cancel context.CancelFunc
}

func (o *openConns) init() {
	o.conns = map[net.Conn]struct{}{}
	o.ctx, o.cancel = context.WithCancel(context.Background())
}

// add registers c; false if the server is already draining.
func (o *openConns) add(c net.Conn) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return false
	}
	o.conns[c] = struct{}{}
	return true
}

func (o *openConns) remove(c net.Conn) {
	o.mu.Lock()
	delete(o.conns, c)
	o.mu.Unlock()
}

func (o *openConns) draining() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.closed
}

// drain ends every open connection: a read deadline in the past stops
// each from reading another request, while the one it runs completes and
// its reply is written (the module has committed or abandoned it by its
// own rules, as when a host goes away). After DrainTimeout the requests'
// context is cancelled and the connections closed.
func (o *openConns) drain() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	o.closed = true
	now := time.Now()
	for c := range o.conns {
		c.SetReadDeadline(now)
		c.SetWriteDeadline(now.Add(DrainTimeout))
	}
	time.AfterFunc(DrainTimeout, func() {
		o.cancel()
		o.mu.Lock()
		defer o.mu.Unlock()
		for c := range o.conns {
			c.Close()
		}
	})
}
