// Pairing through the parties (the operator's Pair call, relayed to the
// peer), and the peer link's gRPC server.

package service

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Pair runs the one-time pairing (party 0), relaying through the peer.
func (p *Party) Pair(ctx context.Context, _ *pb.PairRequest) (*pb.PairReply, error) {
	if p.cfg.Party != 0 {
		return nil, status.Error(codes.FailedPrecondition, "pairing is driven by party 0")
	}
	if err := p.PairModules(ctx); err != nil {
		return nil, status.Error(codes.Aborted, err.Error())
	}
	return &pb.PairReply{Paired: true}, nil
}

// PairModules relays the pairing messages between the two modules.
func (p *Party) PairModules(ctx context.Context) error {
	r, err := p.mod.Provision(ctx, &msg.ProvisionRequest{})
	if err != nil {
		return fmt.Errorf("pairing: own module: %w", err)
	}
	var paired [2]bool
	m := r.Message
	for i := 0; i < 4 && len(m) > 0; i++ {
		if i%2 == 0 {
			pm, err := p.peer.Pair(ctx, &pb.PairMessage{Message: m})
			if err != nil {
				return fmt.Errorf("pairing: peer: %w", err)
			}
			m, paired[1] = pm.Message, paired[1] || pm.Paired
		} else {
			r, err := p.mod.Provision(ctx, &msg.ProvisionRequest{Message: m})
			if err != nil {
				return fmt.Errorf("pairing: own module: %w", err)
			}
			m, paired[0] = r.Message, paired[0] || r.Paired
		}
	}
	if !paired[0] || !paired[1] {
		return errors.New("pairing did not complete")
	}
	p.log.Info("modules paired")
	return nil
}

// Pair (peer link, party 1) hands one pairing message to the module.
func (p *Party) peerPair(ctx context.Context, m *pb.PairMessage) (*pb.PairMessage, error) {
	r, err := p.mod.Provision(ctx, &msg.ProvisionRequest{Message: m.GetMessage()})
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &pb.PairMessage{Message: r.Message, Paired: r.Paired}, nil
}

// PeerServer is party 1's PeerLink service.
type PeerServer struct {
	pb.UnimplementedPeerLinkServer
	p *Party
}

// Peer returns the PeerLink service of party 1.
func (p *Party) Peer() *PeerServer { return &PeerServer{p: p} }

// Pair relays a pairing message to the module.
func (s *PeerServer) Pair(ctx context.Context, m *pb.PairMessage) (*pb.PairMessage, error) {
	return s.p.peerPair(ctx, m)
}

// Session serves party 0's key stream.
func (s *PeerServer) Session(stream pb.PeerLink_SessionServer) error { return s.p.serveSession(stream) }
