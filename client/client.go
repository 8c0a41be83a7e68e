// Package client is the Go client of a kord party's application API
// (KeySource, proto/kord/v1/service.proto). An application at each site
// talks to its own party: it streams requests carrying its own additive
// shares and gets back its own key shares, in order.
//
// Matching: both sites' applications send, for each key they want, a
// request with the same id and the same mode, tier, type and widths. Party
// 0 decides the order in which requests are served (its arrival order);
// party 1 serves its requests in that order by id. Ids must be unique
// among a site's requests in flight.
package client

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kord-fss/kord/fss"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Client is a connection to one party.
type Client struct {
	conn *grpc.ClientConn
	api  pb.KeySourceClient
}

// Dial connects to a party's application address ("host:port" or
// "unix:///path"); creds nil means plaintext.
func Dial(addr string, creds credentials.TransportCredentials) (*Client, error) {
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	// Key replies stream in bulk: a 1 MiB flow-control window keeps the
	// party from waiting for window updates.
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)),
		grpc.WithInitialWindowSize(1<<20), grpc.WithInitialConnWindowSize(1<<20))
	if err != nil {
		return nil, err
	}
	return &Client{conn: conn, api: pb.NewKeySourceClient(conn)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Bound builds a bound-mode request: this site's additive shares of α
// (mod 2^ℓ) and β (mod 2^n).
func Bound(id uint64, tier string, p fss.Params, alphaShare, betaShare uint64) *pb.KeyRequest {
	return &pb.KeyRequest{Id: id, Mode: "bound", Tier: tier, Type: p.Type.String(), InBits: uint32(p.InBits), OutBits: uint32(p.OutBits),
		AlphaShare: alphaShare, BetaShare: betaShare}
}

// Derived builds a request for count keys with α drawn inside the modules
// (β too when deriveBeta; otherwise β is the public beta).
func Derived(id uint64, p fss.Params, count int, beta uint64, deriveBeta bool) *pb.KeyRequest {
	return &pb.KeyRequest{Id: id, Mode: "derived", Type: p.Type.String(), InBits: uint32(p.InBits), OutBits: uint32(p.OutBits),
		Count: uint32(count), Beta: beta, DeriveBeta: deriveBeta}
}

// Consume builds a consume-mode request: the key stays in the module, which
// returns this site's evaluation shares at the public points.
func Consume(id uint64, tier string, p fss.Params, alphaShare, betaShare uint64, points []uint64) *pb.KeyRequest {
	r := Bound(id, tier, p, alphaShare, betaShare)
	r.Mode, r.Points = "consume", points
	return r
}

// Share is this site's output for one key.
type Share struct {
	Counter               uint64
	Key                   *fss.Key // bound, derived
	AlphaShare, BetaShare uint64   // derived
	Evals                 []uint64 // consume
}

// Reply answers one request.
type Reply struct {
	ID     uint64
	Shares []Share
	Err    error // *ReplyError when the party refused the request
}

// ReplyError is a refused request.
type ReplyError struct{ Class, Msg string }

func (e *ReplyError) Error() string { return fmt.Sprintf("kord %s: %s", e.Class, e.Msg) }

// Parse converts a wire reply, parsing the keys.
func Parse(r *pb.KeyReply) *Reply {
	out := &Reply{ID: r.Id}
	if r.Error != "" {
		out.Err = &ReplyError{Class: r.ErrorClass, Msg: r.Error}
		return out
	}
	out.Shares = make([]Share, len(r.Keys))
	for i, k := range r.Keys {
		s := Share{Counter: k.Counter, AlphaShare: k.AlphaShare, BetaShare: k.BetaShare, Evals: k.Evals}
		if len(k.Key) > 0 {
			key, err := fss.ParseKey(k.Key)
			if err != nil {
				out.Err = fmt.Errorf("client: key at counter %d: %w", k.Counter, err)
				return out
			}
			s.Key = key
		}
		out.Shares[i] = s
	}
	return out
}

// Get sends one request and waits for its reply.
func (c *Client) Get(ctx context.Context, r *pb.KeyRequest) (*Reply, error) {
	rep, err := c.api.Get(ctx, r)
	if err != nil {
		return nil, err
	}
	return Parse(rep), nil
}

// Status reports the party.
func (c *Client) Status(ctx context.Context) (*pb.StatusReply, error) {
	return c.api.Status(ctx, &pb.StatusRequest{})
}

// Pair asks party 0 to pair the two modules.
func (c *Client) Pair(ctx context.Context) error {
	_, err := c.api.Pair(ctx, &pb.PairRequest{})
	return err
}

// Stream is a stream of requests answered in order.
type Stream struct {
	s   pb.KeySource_KeysClient
	buf []*pb.KeyReply
}

// Stream opens a request stream.
func (c *Client) Stream(ctx context.Context) (*Stream, error) {
	s, err := c.api.Keys(ctx)
	if err != nil {
		return nil, err
	}
	return &Stream{s: s}, nil
}

// Send sends one request.
func (s *Stream) Send(r *pb.KeyRequest) error {
	return s.s.Send(&pb.KeyRequests{Requests: []*pb.KeyRequest{r}})
}

// SendBatch sends several requests in one message.
func (s *Stream) SendBatch(rs []*pb.KeyRequest) error {
	return s.s.Send(&pb.KeyRequests{Requests: rs})
}

// CloseSend says no more requests follow.
func (s *Stream) CloseSend() error { return s.s.CloseSend() }

// Recv returns the next reply, in request order.
func (s *Stream) Recv() (*Reply, error) {
	r, err := s.RecvRaw()
	if err != nil {
		return nil, err
	}
	return Parse(r), nil
}

// RecvRaw returns the next wire reply without parsing the keys.
func (s *Stream) RecvRaw() (*pb.KeyReply, error) {
	for len(s.buf) == 0 {
		m, err := s.s.Recv()
		if err != nil {
			return nil, err
		}
		s.buf = m.Replies
	}
	r := s.buf[0]
	s.buf = s.buf[1:]
	return r, nil
}
