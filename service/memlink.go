package service

import (
	"context"
	"errors"
	"io"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	pb "github.com/kord-fss/kord/proto/kordpb"
)

// errLinkClosed is returned by a memLink whose session has ended.
var errLinkClosed = errors.New("service: in-process peer link closed")

// memLink is one end of an in-process peer link: the messages of one
// session, in order, both ways, as a transport would carry them — each
// message is a copy (proto.Clone), so neither end ever shares a buffer
// with the other. It ends when its context does or when either end is
// closed.
type memLink struct {
	ctx  context.Context
	in   <-chan *pb.PeerMsg
	out  chan<- *pb.PeerMsg
	done chan struct{}
	shut *atomic.Bool
	// sendShut: this end half-closed the link (CloseSend); set and read
	// under the sender's lock, as a gRPC stream's CloseSend is.
	sendShut bool
	// tap (tests): called on every message this end sends, before the
	// copy; it may alter the message, as an attacker on the link would.
	tap func(*pb.PeerMsg)
}

// memLinkBuffer is how many messages each direction holds unread: about
// what the gRPC stream's flow-control window lets one side run ahead.
const memLinkBuffer = 64

// memLinks returns the two ends of an in-process peer link that ends with
// ctx (or close).
func memLinks(ctx context.Context) (*memLink, *memLink) {
	ab, ba := make(chan *pb.PeerMsg, memLinkBuffer), make(chan *pb.PeerMsg, memLinkBuffer)
	done := make(chan struct{})
	shut := &atomic.Bool{}
	return &memLink{ctx: ctx, in: ba, out: ab, done: done, shut: shut},
		&memLink{ctx: ctx, in: ab, out: ba, done: done, shut: shut}
}

// Send sends a copy of m to the other end.
func (l *memLink) Send(m *pb.PeerMsg) error {
	if l.tap != nil {
		l.tap(m)
	}
	if l.sendShut {
		return errLinkClosed
	}
	c := proto.Clone(m).(*pb.PeerMsg)
	select {
	case <-l.done:
		return errLinkClosed
	case <-l.ctx.Done():
		return l.ctx.Err()
	default:
	}
	select {
	case l.out <- c:
		return nil
	case <-l.done:
		return errLinkClosed
	case <-l.ctx.Done():
		return l.ctx.Err()
	}
}

// Recv receives the next message from the other end. Messages sent
// before the other end closed the link are still received, as over a
// stream whose server has returned.
func (l *memLink) Recv() (*pb.PeerMsg, error) {
	select {
	case m, ok := <-l.in:
		return received(m, ok)
	case <-l.done:
		select {
		case m, ok := <-l.in:
			return received(m, ok)
		default:
			return nil, errLinkClosed
		}
	case <-l.ctx.Done():
		return nil, l.ctx.Err()
	}
}

// received is a read of the channel the other end sends on: its end (io.EOF)
// once that end half-closed the link and everything it sent was read.
func received(m *pb.PeerMsg, ok bool) (*pb.PeerMsg, error) {
	if !ok {
		return nil, io.EOF
	}
	return m, nil
}

// CloseSend half-closes the link: the other end reads what this end sent,
// then io.EOF. Nothing more is sent from this end.
func (l *memLink) CloseSend() error {
	if !l.sendShut {
		l.sendShut = true
		close(l.out)
	}
	return nil
}

// close ends the link at both ends.
func (l *memLink) close() {
	if l.shut.CompareAndSwap(false, true) {
		close(l.done)
	}
}
