package twopc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// MaxFrame bounds one frame; a longer length prefix is an error.
const MaxFrame = 64 << 20

// ErrFrame is returned for a frame that is too long or not of the shape
// the protocol step expects.
var ErrFrame = errors.New("twopc: malformed frame")

// Conn carries the protocol's exchanges over a stream (a TCP connection,
// shaped or not): in one exchange each party sends one frame (a 4-byte
// little-endian length and the body) and receives the peer's. It counts
// exchanges and the payload bytes this party sent (frame bodies; the
// 4-byte length prefixes are not counted, as kord's host links count
// module frames only).
type Conn struct {
	c      net.Conn
	sent   uint64
	rounds int
}

// NewConn wraps c.
func NewConn(c net.Conn) *Conn { return &Conn{c: c} }

// Counters are a party's traffic: exchanges (each one frame each way,
// sent at once) and payload bytes sent.
type Counters struct {
	Rounds int
	Bytes  uint64
}

// Sub is c − o.
func (c Counters) Sub(o Counters) Counters {
	return Counters{Rounds: c.Rounds - o.Rounds, Bytes: c.Bytes - o.Bytes}
}

// Counters returns the totals so far.
func (c *Conn) Counters() Counters { return Counters{Rounds: c.rounds, Bytes: c.sent} }

// Close closes the underlying connection.
func (c *Conn) Close() error { return c.c.Close() }

// Exchange sends out and returns the peer's frame. The write runs beside
// the read so that two large frames cannot block each other.
func (c *Conn) Exchange(ctx context.Context, out []byte) ([]byte, error) {
	return c.exchange(ctx, out, len(out))
}

// exchange is Exchange counting payload bytes for out (less than its
// length when out carries several keys' frames with their own lengths).
func (c *Conn) exchange(ctx context.Context, out []byte, payload int) ([]byte, error) {
	if len(out) > MaxFrame {
		return nil, fmt.Errorf("%w: sending %d bytes, the limit is %d", ErrFrame, len(out), MaxFrame)
	}
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Time{}
	}
	if err := c.c.SetDeadline(dl); err != nil {
		return nil, fmt.Errorf("twopc: deadline: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { c.c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	frame := make([]byte, 4+len(out))
	binary.LittleEndian.PutUint32(frame, uint32(len(out)))
	copy(frame[4:], out)
	werr := make(chan error, 1)
	go func() {
		_, err := c.c.Write(frame)
		werr <- err
	}()
	in, rerr := readFrame(c.c)
	if err := <-werr; err != nil {
		return nil, fmt.Errorf("twopc: send: %w", err)
	}
	if rerr != nil {
		return nil, rerr
	}
	c.sent += uint64(payload)
	c.rounds++
	return in, nil
}

func readFrame(r io.Reader) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, fmt.Errorf("twopc: receive: %w", err)
	}
	n := binary.LittleEndian.Uint32(h[:])
	if n > MaxFrame {
		return nil, fmt.Errorf("%w: peer announced %d bytes, the limit is %d", ErrFrame, n, MaxFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("twopc: receive: %w", err)
	}
	return b, nil
}

// frameReader splits a received frame into the fields a step expects.
type frameReader struct {
	b    []byte
	step string
	err  error
}

func (f *frameReader) take(n int, what string) []byte {
	if f.err != nil {
		return nil
	}
	if n < 0 || n > len(f.b) {
		f.err = fmt.Errorf("%w: %s: %s needs %d bytes, %d left", ErrFrame, f.step, what, n, len(f.b))
		return nil
	}
	out := f.b[:n]
	f.b = f.b[n:]
	return out
}

// done reports a short read or trailing bytes.
func (f *frameReader) done() error {
	if f.err == nil && len(f.b) != 0 {
		f.err = fmt.Errorf("%w: %s: %d trailing bytes", ErrFrame, f.step, len(f.b))
	}
	return f.err
}
