package compare

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/kord-fss/kord/host"
	"github.com/kord-fss/kord/internal/netshape"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
)

// tcpLink is a host.Link over a (shaped) TCP connection: each frame is a
// 4-byte little-endian length and the frame. It counts the frame bytes it
// sends (not the length prefixes), as the baseline's Conn does.
type tcpLink struct {
	c      net.Conn
	wmu    sync.Mutex
	sent   atomic.Uint64
	frames chan []byte
	err    chan error
}

func newTCPLink(c net.Conn) *tcpLink {
	l := &tcpLink{c: c, frames: make(chan []byte, 1024), err: make(chan error, 1)}
	go l.pump()
	return l
}

// kordInFlight is the hosts' batch size: a source call of up to this many
// keys is one exchange.
const kordInFlight = 4096

// maxKordFrame bounds one module frame read from the link.
const maxKordFrame = 16 << 20

func (l *tcpLink) pump() {
	for {
		var h [4]byte
		if _, err := io.ReadFull(l.c, h[:]); err != nil {
			l.err <- err
			close(l.frames)
			return
		}
		n := binary.LittleEndian.Uint32(h[:])
		if n > maxKordFrame {
			l.err <- fmt.Errorf("compare: peer frame of %d bytes exceeds %d", n, maxKordFrame)
			close(l.frames)
			return
		}
		f := make([]byte, n)
		if _, err := io.ReadFull(l.c, f); err != nil {
			l.err <- err
			close(l.frames)
			return
		}
		l.frames <- f
	}
}

func (l *tcpLink) Send(ctx context.Context, frame []byte) error {
	b := make([]byte, 4+len(frame))
	binary.LittleEndian.PutUint32(b, uint32(len(frame)))
	copy(b[4:], frame)
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if _, err := l.c.Write(b); err != nil {
		return fmt.Errorf("compare: kord link send: %w", err)
	}
	l.sent.Add(uint64(len(frame)))
	return nil
}

func (l *tcpLink) Recv(ctx context.Context) ([]byte, error) {
	select {
	case f, ok := <-l.frames:
		if !ok {
			return nil, fmt.Errorf("compare: kord link closed: %w", <-l.err)
		}
		return f, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// kordPair is two freshly paired software modules and their hosts, the
// hosts joined by one TCP connection through the same shaper as the
// baseline's parties.
type kordPair struct {
	hosts [2]*host.Host
	links [2]*tcpLink
	conns [2]net.Conn
}

func newKordPair(ctx context.Context, link netshape.Profile) (*kordPair, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("compare: provisioning secret: %w", err)
	}
	defer clear(secret)
	var devs [2]module.Device
	for b := range 2 {
		d, err := module.NewSoftware(module.Config{Party: b, Secret: secret, Workers: 1})
		if err != nil {
			return nil, fmt.Errorf("compare: kord module %d: %w", b, err)
		}
		devs[b] = d
	}
	if err := module.Pair(ctx, devs[0], devs[1]); err != nil {
		return nil, fmt.Errorf("compare: pairing kord's modules: %w", err)
	}
	a, b, err := netshape.TCPPair(link)
	if err != nil {
		return nil, err
	}
	kp := &kordPair{conns: [2]net.Conn{a, b}}
	for i := range 2 {
		kp.links[i] = newTCPLink(kp.conns[i])
		kp.hosts[i] = host.New(devs[i], kp.links[i], kordInFlight, nil)
	}
	return kp, nil
}

func (kp *kordPair) close() error {
	return errors.Join(kp.conns[0].Close(), kp.conns[1].Close())
}

// generateN runs both hosts on their parties' requests (one exchange per
// kordInFlight of them) and returns both parties' results once their pair
// tags agree.
func (kp *kordPair) generateN(ctx context.Context, tier msg.Tier, reqs [2][]host.Request) ([2][]host.Result, error) {
	var out [2][]host.Result
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var errs [2]error
	var wg sync.WaitGroup
	for b := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[b], errs[b] = kp.hosts[b].Generate(ctx, tier, reqs[b])
			if errs[b] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return out, err
	}
	if len(out[0]) != len(out[1]) {
		return out, fmt.Errorf("compare: kord hosts returned %d and %d results", len(out[0]), len(out[1]))
	}
	for i := range out[0] {
		if out[0][i].PairTag != out[1][i].PairTag {
			return out, host.ErrTampered
		}
	}
	return out, nil
}
