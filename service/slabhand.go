package service

import (
	"context"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/peer"

	"github.com/kord-fss/kord/internal/fdpass"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Slabs handed to a same-host application (issue 34): where a message's
// keys are exactly the whole of a slab that the module handed this party
// as a sealed memfd (socket.Client.DoMapped), and the application asked
// for slab_fds on its Unix connection, the party passes that memfd on
// with the message (PackedReplies.keys_fd) instead of writing the keys:
// the application reads them from it, in one copy. Only a
// whole slab goes, so the application receives no byte it would not have
// received as bytes in the same message; each memfd goes at most once
// (socket.TakeSlabFD), after the party has decided to deliver the
// message, on the connection of the application whose message it is.

// fdStream is whether one application stream takes slabs as memfds (on,
// from its first slab_fds request), counted among its application's
// (noteFDStream) until the stream is over, whichever of the stream's
// goroutines gets there first.
type fdStream struct {
	p     *Party
	app   string
	on    atomic.Bool
	mu    sync.Mutex
	ended bool
}

func (s *fdStream) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended && !s.on.Swap(true) {
		s.p.noteFDStream(s.app, 1)
	}
}

func (s *fdStream) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.on.Load() && !s.ended {
		s.p.noteFDStream(s.app, -1)
	}
	s.ended = true
}

// noteFDStream counts (d = 1) or uncounts (d = -1) one of app's streams
// that takes slabs as memfds.
func (p *Party) noteFDStream(app string, d int) {
	p.fdMu.Lock()
	defer p.fdMu.Unlock()
	if p.fdStreams == nil {
		p.fdStreams = map[string]int{}
	}
	if p.fdStreams[app] += d; p.fdStreams[app] <= 0 {
		delete(p.fdStreams, app)
	}
}

// wantsFDs reports whether app has a stream that takes slabs as memfds:
// only then does the party ask its module for a batch's slabs as memfds.
// For every other application the keys go out as bytes anyway, and
// reading them from a fresh mapping cost more than from the socket
// (BENCHMARKS.md, issue 34).
func (p *Party) wantsFDs(app string) bool {
	p.fdMu.Lock()
	defer p.fdMu.Unlock()
	return p.fdStreams[app] > 0
}

// appConn returns the fd-passing connection the stream's application is
// on, or nil (TCP, or a platform without fd passing).
func appConn(ctx context.Context) *fdpass.Conn {
	pr, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	return fdpass.Of(pr.AuthInfo)
}

// handOn passes the message's keys to c as the sealed memfd they are in,
// when they are exactly a whole slab mapped from one: pk.Keys is then
// empty and pk.KeysFd names the memfd. It reports whether it did.
func (rb *replyBuf) handOn(c *fdpass.Conn) bool {
	if c == nil || !rb.aliased || rb.start != 0 || rb.end != len(rb.buf) || len(rb.buf) == 0 {
		return false
	}
	fd, ok := socket.TakeSlabFD(rb.buf)
	if !ok {
		return false
	}
	id, err := fdpass.IDOf(fd)
	if err != nil {
		socket.CloseFD(fd)
		return false
	}
	if c.Send(fd) != nil {
		return false
	}
	rb.pk.KeysFd = &pb.SlabFD{Dev: id.Dev, Inode: id.Inode, Size: uint64(len(rb.buf))}
	rb.pk.Keys = nil
	return true
}
