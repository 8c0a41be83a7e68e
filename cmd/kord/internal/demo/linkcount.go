package demo

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// linkCounter relays TCP connections to a target and counts the bytes
// that pass in both directions: put in front of party 1's peer port
// (cluster.Options.PeerVia), it measures what the peer link carries per
// key — frames, batch headers, confirmations, gRPC and TLS framing.
type linkCounter struct {
	l      net.Listener
	target string
	bytes  atomic.Int64
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

// newLinkCounter listens on a loopback port and relays to target.
func newLinkCounter(target string) (*linkCounter, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &linkCounter{l: l, target: target}
	c.wg.Go(c.serve)
	return c, nil
}

func (c *linkCounter) addr() string { return c.l.Addr().String() }

func (c *linkCounter) serve() {
	for {
		in, err := c.l.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", c.target)
		if err != nil {
			in.Close()
			continue
		}
		c.mu.Lock()
		c.conns = append(c.conns, in, out)
		c.mu.Unlock()
		c.wg.Go(func() { c.pipe(out, in) })
		c.wg.Go(func() { c.pipe(in, out) })
	}
}

func (c *linkCounter) pipe(dst, src net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			c.bytes.Add(int64(n))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				break
			}
			break
		}
	}
	dst.Close()
	src.Close()
}

// close stops the relay and its connections.
func (c *linkCounter) close() {
	c.l.Close()
	c.mu.Lock()
	for _, x := range c.conns {
		x.Close()
	}
	c.mu.Unlock()
	c.wg.Wait()
}
