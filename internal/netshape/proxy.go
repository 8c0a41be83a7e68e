package netshape

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// Proxy is a TCP forwarder on loopback that puts a shaped, counted link
// in front of a target: every connection accepted on Addr is forwarded to
// the target, each direction shaped by the profile on its own and its
// bytes counted. It stands for the network between two sites (e.g. the
// party daemons' peer link, cluster.Options.PeerVia), so that the bytes
// crossing it are measured on the real sockets.
type Proxy struct {
	l      net.Listener
	target string
	p      Profile
	bytes  atomic.Int64
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// NewProxy listens on 127.0.0.1 and forwards to target over links shaped
// by p.
func NewProxy(target string, p Profile) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("netshape: proxy listen: %w", err)
	}
	x := &Proxy{l: l, target: target, p: p, conns: map[net.Conn]struct{}{}}
	x.wg.Add(1)
	go x.serve()
	return x, nil
}

// Addr is the address to dial instead of the target.
func (x *Proxy) Addr() string { return x.l.Addr().String() }

// Bytes is the number of bytes forwarded so far, both directions.
func (x *Proxy) Bytes() int64 { return x.bytes.Load() }

func (x *Proxy) track(c net.Conn) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return false
	}
	x.conns[c] = struct{}{}
	return true
}

func (x *Proxy) serve() {
	defer x.wg.Done()
	for {
		c, err := x.l.Accept()
		if err != nil {
			return
		}
		d, err := net.Dial("tcp", x.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		// Wrap shapes what the proxy writes: toClient carries the
		// target's answers, toTarget the client's requests.
		toClient, toTarget := Wrap(c, x.p), Wrap(d, x.p)
		if !x.track(toClient) || !x.track(toTarget) {
			_ = toClient.Close()
			_ = toTarget.Close()
			return
		}
		x.wg.Add(2)
		go x.pipe(toTarget, toClient)
		go x.pipe(toClient, toTarget)
	}
}

// countWriter counts what reaches w.
type countWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// pipe copies src to dst until either fails, then closes both.
func (x *Proxy) pipe(dst, src net.Conn) {
	defer x.wg.Done()
	_, _ = io.Copy(countWriter{dst, &x.bytes}, src)
	_ = dst.Close()
	_ = src.Close()
}

// Close stops the proxy and cuts its connections.
func (x *Proxy) Close() error {
	x.mu.Lock()
	x.closed = true
	conns := x.conns
	x.conns = nil
	x.mu.Unlock()
	err := x.l.Close()
	for c := range conns {
		if cerr := c.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = errors.Join(err, cerr)
		}
	}
	x.wg.Wait()
	return err
}
