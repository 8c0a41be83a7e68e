package bench

// The transport floor of bench deliver: what moving a row's key-share
// bytes over the processes path's kinds of sockets costs on this machine,
// with no key generation, no protocol and no framing — the rate the
// processes path could reach if the daemons did nothing but relay bytes.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// floorSendBuffer mirrors the module socket's send buffer (module/socket:
// a batch's slab fits in it).
const floorSendBuffer = 4 << 20

// transportFloor pushes keys key shares of size bytes each for both
// parties at once, each party's bytes over two hops as on the processes
// path: a Unix socket (module → party) and then a loopback TCP connection
// (party → application; with appUnix a second Unix socket, as --app-link
// unix). The sender writes batch keys per write from one reused buffer, the
// relay forwards what it reads, the receiver reads it all. It returns key
// pairs per second: keys over the time until both receivers have every
// byte.
func transportFloor(keys, size, batch int, appUnix bool) (float64, error) {
	dir, err := os.MkdirTemp("", "kord-floor-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	type hops struct{ src, mid, dst [2]net.Conn } // [write end, read end]
	var hs [2]hops
	defer func() {
		for _, h := range hs {
			for _, c := range [][2]net.Conn{h.src, h.mid} {
				for _, x := range c {
					if x != nil {
						x.Close()
					}
				}
			}
		}
	}()
	for b := range hs {
		if hs[b].src, err = connPair("unix", filepath.Join(dir, fmt.Sprintf("m%d.sock", b))); err != nil {
			return 0, err
		}
		if appUnix {
			hs[b].mid, err = connPair("unix", filepath.Join(dir, fmt.Sprintf("a%d.sock", b)))
		} else {
			hs[b].mid, err = connPair("tcp", "127.0.0.1:0")
		}
		if err != nil {
			return 0, err
		}
		if c, ok := hs[b].src[0].(interface{ SetWriteBuffer(int) error }); ok {
			_ = c.SetWriteBuffer(floorSendBuffer)
		}
	}
	total := int64(keys) * int64(size)
	msg := batch * size
	var wg sync.WaitGroup
	errs := make([]error, 6)
	// A failed hop closes every connection, so that no other goroutine
	// waits for bytes that will not come.
	var once sync.Once
	fail := func(i int, err error) {
		errs[i] = err
		once.Do(func() {
			for _, h := range hs {
				for _, c := range [][2]net.Conn{h.src, h.mid} {
					c[0].Close()
					c[1].Close()
				}
			}
		})
	}
	start := time.Now()
	for b := range hs {
		h := hs[b]
		wg.Add(3)
		go func() { // the module: writes its slabs
			defer wg.Done()
			buf := make([]byte, msg)
			for left := total; left > 0; {
				n := min(int64(len(buf)), left)
				if _, err := h.src[0].Write(buf[:n]); err != nil {
					fail(3*b, err)
					return
				}
				left -= n
			}
		}()
		go func() { // the party: relays what it reads
			defer wg.Done()
			buf := make([]byte, msg)
			if _, err := io.CopyBuffer(struct{ io.Writer }{h.mid[0]}, io.LimitReader(h.src[1], total), buf); err != nil {
				fail(3*b+1, err)
			}
		}()
		go func() { // the application: reads it all
			defer wg.Done()
			buf := make([]byte, msg)
			n, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, io.LimitReader(h.mid[1], total), buf)
			if err == nil && n != total {
				err = fmt.Errorf("received %d of %d bytes", n, total)
			}
			if err != nil {
				fail(3*b+2, err)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("transport floor: %w", err)
	}
	return float64(keys) / el.Seconds(), nil
}

// connPair is a connected pair of sockets on network at addr: [0] the
// dialled end (written), [1] the accepted end (read).
func connPair(network, addr string) ([2]net.Conn, error) {
	var out [2]net.Conn
	l, err := net.Listen(network, addr)
	if err != nil {
		return out, err
	}
	defer l.Close()
	acc := make(chan error, 1)
	go func() {
		var err error
		out[1], err = l.Accept()
		acc <- err
	}()
	out[0], err = net.Dial(network, l.Addr().String())
	if aerr := <-acc; err == nil {
		err = aerr
	}
	if err != nil {
		for _, c := range out {
			if c != nil {
				c.Close()
			}
		}
		return [2]net.Conn{}, err
	}
	return out, nil
}
