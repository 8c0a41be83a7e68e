// Package loopback opens the two ends of a fresh TCP connection on
// 127.0.0.1 with Nagle's algorithm off: the link of two parties that run
// on one machine, raw (infer.LoopbackPair) or shaped (netshape.TCPPair).
package loopback

import (
	"fmt"
	"net"
)

// Pair returns the accepted and the dialled end of one new loopback TCP
// connection, both with TCP_NODELAY.
func Pair() (a, b net.Conn, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("loopback: listen: %w", err)
	}
	defer ln.Close()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		ch <- res{c, err}
	}()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return nil, nil, fmt.Errorf("loopback: dial: %w", err)
	}
	r := <-ch
	if r.err != nil {
		d.Close()
		return nil, nil, fmt.Errorf("loopback: accept: %w", r.err)
	}
	for _, c := range []net.Conn{r.c, d} {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
	}
	return r.c, d, nil
}
