package infer

import (
	"fmt"
	"net"
)

// LoopbackPair is the two ends of one unshaped TCP connection on
// loopback, Nagle off: the online parties' link when both run in this
// process (RunStream without StreamConfig.Pair). Shaped links are the
// runners' (cmd/kord/internal/inferdemo, on internal/netshape).
func LoopbackPair() (a, b net.Conn, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("infer: listen: %w", err)
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
		return nil, nil, fmt.Errorf("infer: dial: %w", err)
	}
	r := <-ch
	if r.err != nil {
		d.Close()
		return nil, nil, fmt.Errorf("infer: accept: %w", r.err)
	}
	for _, c := range []net.Conn{r.c, d} {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
	}
	return r.c, d, nil
}
