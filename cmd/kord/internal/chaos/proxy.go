package chaos

import (
	mrand "math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// faultProxy forwards party 0's peer connections to party 1 and, while
// active, injects faults: delays, partitions (every connection cut and new
// ones refused for a while), resets, and corrupted or duplicated chunks
// (which TLS detects on the default mutually authenticated link, as the
// HTTP/2 framing would on a plaintext one, ending the connection). Every
// goroutine it starts has ended when close returns.
type faultProxy struct {
	rng    *mrand.Rand
	rmu    sync.Mutex
	l      net.Listener
	target string
	active atomic.Bool
	faults atomic.Int64
	done   chan struct{} // closed by close: the run is over
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
	until  time.Time // partitioned until
	closed bool
}

func newFaultProxy(seed uint64) *faultProxy {
	return &faultProxy{rng: mrand.New(mrand.NewPCG(seed, 3)), done: make(chan struct{}), conns: map[net.Conn]bool{}}
}

func (f *faultProxy) roll(n int) int {
	f.rmu.Lock()
	defer f.rmu.Unlock()
	return f.rng.IntN(n)
}

func (f *faultProxy) start(target string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		l.Close()
		return "", net.ErrClosed
	}
	f.l, f.target = l, target
	f.mu.Unlock()
	f.wg.Add(2)
	go func() {
		defer f.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				f.serve(c)
			}()
		}
	}()
	go func() {
		defer f.wg.Done()
		f.chaos()
	}()
	return l.Addr().String(), nil
}

// close stops the proxy: its listener, every connection through it and
// every goroutine it started, which have ended when close returns. A
// second close does nothing; so does close on a proxy never started.
func (f *faultProxy) close() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	l := f.l
	f.mu.Unlock()
	close(f.done)
	if l != nil {
		l.Close()
	}
	f.cutAll()
	f.wg.Wait()
}

func (f *faultProxy) cutAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		c.Close()
	}
	clear(f.conns)
}

// chaos partitions the link now and then, until the proxy closes.
func (f *faultProxy) chaos() {
	for {
		select {
		case <-f.done:
			return
		case <-time.After(time.Duration(200+f.roll(400)) * time.Millisecond):
		}
		if !f.active.Load() {
			continue
		}
		if f.roll(3) == 0 {
			f.faults.Add(1)
			f.mu.Lock()
			f.until = time.Now().Add(time.Duration(50+f.roll(300)) * time.Millisecond)
			f.mu.Unlock()
			f.cutAll()
		}
	}
}

func (f *faultProxy) serve(c net.Conn) {
	f.mu.Lock()
	part := time.Now().Before(f.until)
	f.mu.Unlock()
	if part {
		c.Close()
		return
	}
	up, err := net.Dial("tcp", f.target)
	if err != nil {
		c.Close()
		return
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	f.conns[c], f.conns[up] = true, true
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.conns, c)
		delete(f.conns, up)
		f.mu.Unlock()
	}()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.pipe(up, c)
	}()
	f.pipe(c, up)
}

func (f *faultProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		chunk := buf[:n]
		if f.active.Load() {
			switch r := f.roll(200); {
			case r < 8: // delay
				f.faults.Add(1)
				time.Sleep(time.Duration(1+f.roll(40)) * time.Millisecond)
			case r == 8: // reset: drop what is in flight
				f.faults.Add(1)
				return
			case r == 9: // duplicate the chunk
				f.faults.Add(1)
				if _, err := dst.Write(chunk); err != nil {
					return
				}
			case r == 10: // corrupt a byte
				f.faults.Add(1)
				chunk = append([]byte(nil), chunk...)
				chunk[f.roll(len(chunk))] ^= 0x55
			}
		}
		if _, err := dst.Write(chunk); err != nil {
			return
		}
	}
}
