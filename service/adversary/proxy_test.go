package adversary

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Directions of a peer message.
const (
	from0 = 0 // party 0 → party 1 (hello, witness, batch, confirm)
	from1 = 1 // party 1 → party 0 (hello reply, sync done, batch reply)
)

// hook decides what becomes of one peer message: the messages to forward
// in its place (none: dropped), or cut to end the session. It runs on the
// direction's own goroutine, so it may sleep (a delay) and keep state (a
// reorder) per direction.
type hook func(s *session, dir int, m *pb.PeerMsg) (out []*pb.PeerMsg, cut bool)

// proxy is the adversary's position on the peer link: party 0 dials it
// as party 1's peer address, and it forwards each session to the real
// party 1 through the hook. Pairing passes through untouched.
type proxy struct {
	pb.UnimplementedPeerLinkServer
	t    testing.TB
	addr string

	mu       sync.Mutex
	upstream *grpc.ClientConn
	hook     hook
	// observe (the oracle) sees each message before the hook (pre, a
	// copy) and what the hook forwarded in its place (post).
	observe func(dir int, pre *pb.PeerMsg, post []*pb.PeerMsg)
	n       int      // sessions so far
	cur     *session // the session now running
	// seen: every message as it was sent (before the hook), in order,
	// with its session and direction, for attacks that replay or harvest.
	seen []seenMsg
}

type seenMsg struct {
	sess, dir int
	m         *pb.PeerMsg
}

// session is one peer session through the proxy.
type session struct {
	n      int
	cancel context.CancelFunc
}

func newProxy(t testing.TB) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	x := &proxy{t: t, addr: l.Addr().String()}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(64<<20))
	pb.RegisterPeerLinkServer(srv, x)
	go srv.Serve(l)
	t.Cleanup(func() {
		srv.Stop()
		x.mu.Lock()
		if x.upstream != nil {
			x.upstream.Close()
		}
		x.mu.Unlock()
	})
	return x
}

// setUpstream points the proxy at party 1's (new) peer address.
func (x *proxy) setUpstream(addr string) {
	c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		x.t.Fatal(err)
	}
	x.mu.Lock()
	old := x.upstream
	x.upstream = c
	x.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

func (x *proxy) setHook(h hook) {
	x.mu.Lock()
	x.hook = h
	x.mu.Unlock()
}

// cut ends the session now running (party 0 reconnects by itself).
func (x *proxy) cut() {
	x.mu.Lock()
	s := x.cur
	x.mu.Unlock()
	if s != nil {
		s.cancel()
	}
}

// messages returns the messages seen so far that pick accepts.
func (x *proxy) messages(pick func(seenMsg) bool) []seenMsg {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []seenMsg
	for _, s := range x.seen {
		if pick(s) {
			out = append(out, s)
		}
	}
	return out
}

func (x *proxy) Pair(ctx context.Context, m *pb.PairMessage) (*pb.PairMessage, error) {
	x.mu.Lock()
	c := x.upstream
	x.mu.Unlock()
	return pb.NewPeerLinkClient(c).Pair(ctx, m)
}

var errCut = errors.New("adversary: session cut")

func (x *proxy) Session(down pb.PeerLink_SessionServer) error {
	ctx, cancel := context.WithCancel(down.Context())
	defer cancel()
	x.mu.Lock()
	x.n++
	s := &session{n: x.n, cancel: cancel}
	x.cur = s
	c := x.upstream
	x.mu.Unlock()
	up, err := pb.NewPeerLinkClient(c).Session(ctx)
	if err != nil {
		return err
	}
	errc := make(chan error, 2)
	pump := func(dir int, recv func() (*pb.PeerMsg, error), send func(*pb.PeerMsg) error) {
		for {
			m, err := recv()
			if dir == from0 && errors.Is(err, io.EOF) {
				// Party 0 half-closed its side: passed on, as a TCP
				// relay passes on a FIN, and the session ends when
				// party 1 ends its side.
				up.CloseSend()
				return
			}
			if err != nil {
				errc <- err
				return
			}
			pre := proto.Clone(m).(*pb.PeerMsg)
			x.mu.Lock()
			x.seen = append(x.seen, seenMsg{s.n, dir, pre})
			h, obs := x.hook, x.observe
			x.mu.Unlock()
			out, cut := []*pb.PeerMsg{m}, false
			if h != nil {
				out, cut = h(s, dir, m)
			}
			if obs != nil {
				obs(dir, pre, out)
			}
			for _, o := range out {
				if err := send(o); err != nil {
					errc <- err
					return
				}
			}
			if cut {
				errc <- errCut
				return
			}
		}
	}
	go pump(from0, down.Recv, up.Send)
	go pump(from1, up.Recv, down.Send)
	select {
	case err = <-errc:
	case <-ctx.Done():
		err = ctx.Err()
	}
	x.mu.Lock()
	if x.cur == s {
		x.cur = nil
	}
	x.mu.Unlock()
	return err
}
