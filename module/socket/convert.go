package socket

import (
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/modulepb"
)

// u8 narrows a wire integer; out-of-range values become 0, which every
// enum of package msg treats as unknown (the module then names the field).
func u8(v uint32) uint8 {
	if v > 255 {
		return 0
	}
	return uint8(v)
}

// bits narrows a width; anything over 255 becomes 0 (rejected as outside 1..64).
func bits(v uint32) int {
	if v > 255 {
		return 0
	}
	return int(v)
}

// ShareToPB converts a share request to its wire form.
func ShareToPB(s msg.Share) *pb.Share {
	return &pb.Share{Mode: uint32(s.Mode), Type: uint32(s.Type), InBits: uint32(s.InBits), OutBits: uint32(s.OutBits),
		AlphaShare: s.AlphaShare, BetaShare: s.BetaShare, DeriveBeta: s.DeriveBeta, Beta: s.Beta}
}

// ShareFromPB converts a wire share request.
func ShareFromPB(s *pb.Share) msg.Share {
	return msg.Share{Mode: msg.Mode(u8(s.GetMode())), Type: fss.Type(u8(s.GetType())), InBits: bits(s.GetInBits()), OutBits: bits(s.GetOutBits()),
		AlphaShare: s.GetAlphaShare(), BetaShare: s.GetBetaShare(), DeriveBeta: s.GetDeriveBeta(), Beta: s.GetBeta()}
}

func submitReqToPB(r *msg.SubmitRequest) *pb.SubmitRequest {
	o := &pb.SubmitRequest{Kind: uint32(r.Kind), Tier: uint32(r.Tier), Frame: r.Frame, Counter: r.Counter}
	o.Shares = make([]*pb.Share, len(r.Shares))
	for i, s := range r.Shares {
		o.Shares[i] = ShareToPB(s)
	}
	return o
}

func submitReqFromPB(r *pb.SubmitRequest) *msg.SubmitRequest {
	o := &msg.SubmitRequest{Kind: msg.SubmitKind(u8(r.GetKind())), Tier: msg.Tier(u8(r.GetTier())), Frame: r.GetFrame(), Counter: r.GetCounter()}
	if len(r.GetShares()) > 0 {
		o.Shares = make([]msg.Share, len(r.Shares))
		for i, s := range r.Shares {
			o.Shares[i] = ShareFromPB(s)
		}
	}
	return o
}

func submitRespToPB(r *msg.SubmitResponse) *pb.SubmitResponse {
	return &pb.SubmitResponse{FirstCounter: r.FirstCounter, Count: uint32(r.Count), Frames: r.Frames,
		Accepted: r.Accepted, Counters: r.Counters, Reject: r.Reject}
}

func submitRespFromPB(r *pb.SubmitResponse) *msg.SubmitResponse {
	return &msg.SubmitResponse{FirstCounter: r.GetFirstCounter(), Count: int(r.GetCount()), Frames: r.GetFrames(),
		Accepted: r.GetAccepted(), Counters: r.GetCounters(), Reject: r.GetReject()}
}

// PollToPB converts a status report.
func PollToPB(r *msg.PollResponse, locked bool) *pb.PollResponse {
	return &pb.PollResponse{Party: uint32(r.Party), Paired: r.Paired, Kem: r.KEM, NextCounter: r.NextCounter,
		PeerFloor: r.PeerFloor, Generated: r.Generated, Dispatches: r.Dispatches, Pending: uint32(r.Pending),
		Ready: uint32(r.Ready), Rejects: r.Rejects, Locked: locked}
}

// PollFromPB converts a wire status report.
func PollFromPB(r *pb.PollResponse) *msg.PollResponse {
	return &msg.PollResponse{Party: int(r.GetParty()), Paired: r.GetPaired(), KEM: r.GetKem(), NextCounter: r.GetNextCounter(),
		PeerFloor: r.GetPeerFloor(), Generated: r.GetGenerated(), Dispatches: r.GetDispatches(), Pending: int(r.GetPending()),
		Ready: int(r.GetReady()), Rejects: r.GetRejects()}
}

func collectRespToPB(r *msg.CollectResponse) *pb.CollectResponse {
	return &pb.CollectResponse{Counter: r.Counter, Mode: uint32(r.Mode), Key: r.Key, AlphaShare: r.AlphaShare, BetaShare: r.BetaShare, Evals: r.Evals}
}

func collectRespFromPB(r *pb.CollectResponse) *msg.CollectResponse {
	return &msg.CollectResponse{Counter: r.GetCounter(), Mode: msg.Mode(u8(r.GetMode())), Key: r.GetKey(),
		AlphaShare: r.GetAlphaShare(), BetaShare: r.GetBetaShare(), Evals: r.GetEvals()}
}
