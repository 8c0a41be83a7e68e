package pir

import (
	"context"
	"net"
)

// loopbackPair starts two servers over db on 127.0.0.1 ephemeral ports and
// returns a client for them and a stop function.
func loopbackPair(ctx context.Context, db *DB, workers int) (*Client, func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	var addrs [2]string
	done := make(chan struct{}, 2)
	for i := range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			cancel()
			return nil, nil, err
		}
		addrs[i] = ln.Addr().String()
		s := NewServer(db, workers, 0, nil)
		go func() {
			_ = s.Serve(ctx, ln)
			done <- struct{}{}
		}()
	}
	stop := func() {
		cancel()
		<-done
		<-done
	}
	return NewClient(addrs[0], addrs[1], nil), stop, nil
}
