package host

import (
	"context"
	"errors"
	"sync/atomic"
)

// Link carries frames between the two hosts, one frame per message. The
// in-process Pipe implements it now; the services put gRPC behind it.
type Link interface {
	Send(ctx context.Context, frame []byte) error
	Recv(ctx context.Context) ([]byte, error)
}

// ErrClosed is returned by a closed pipe end.
var ErrClosed = errors.New("host: link closed")

// PipeEnd is one end of an in-process link. It counts what it sends: the
// bytes that actually cross between the hosts (frames only, no framing).
type PipeEnd struct {
	in, out chan []byte
	done    chan struct{}
	closed  *atomic.Bool
	bytes   atomic.Uint64
	frames  atomic.Uint64
}

// Pipe returns the two ends of an in-process link with room for buffer
// frames in each direction.
func Pipe(buffer int) (*PipeEnd, *PipeEnd) {
	ab, ba := make(chan []byte, buffer), make(chan []byte, buffer)
	done := make(chan struct{})
	closed := &atomic.Bool{}
	return &PipeEnd{in: ba, out: ab, done: done, closed: closed},
		&PipeEnd{in: ab, out: ba, done: done, closed: closed}
}

// Send sends a copy of frame to the other end.
func (p *PipeEnd) Send(ctx context.Context, frame []byte) error {
	f := append([]byte(nil), frame...)
	select {
	case p.out <- f:
		p.bytes.Add(uint64(len(f)))
		p.frames.Add(1)
		return nil
	case <-p.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Recv receives the next frame from the other end.
func (p *PipeEnd) Recv(ctx context.Context) ([]byte, error) {
	select {
	case f := <-p.in:
		return f, nil
	case <-p.done:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// drain discards frames waiting at this end.
func (p *PipeEnd) drain() {
	for {
		select {
		case <-p.in:
		default:
			return
		}
	}
}

// Close closes both ends.
func (p *PipeEnd) Close() {
	if p.closed.CompareAndSwap(false, true) {
		close(p.done)
	}
}

// SentBytes is the total of frame bytes this end has sent.
func (p *PipeEnd) SentBytes() uint64 { return p.bytes.Load() }

// SentFrames is the number of frames this end has sent.
func (p *PipeEnd) SentFrames() uint64 { return p.frames.Load() }
