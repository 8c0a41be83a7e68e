package socket

import (
	"fmt"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module"
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

// prof narrows a profile; anything over 255 becomes 255, an unknown
// profile the module refuses (never 0, which is kord-v1).
func prof(v uint32) msg.Profile {
	if v > 255 {
		return 255
	}
	return msg.Profile(v)
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
	return &pb.Share{Mode: uint32(s.Mode), Profile: uint32(s.Profile), Type: uint32(s.Type), InBits: uint32(s.InBits), OutBits: uint32(s.OutBits),
		AlphaShare: s.AlphaShare, BetaShare: s.BetaShare, DeriveBeta: s.DeriveBeta, Beta: s.Beta}
}

// ShareFromPB converts a wire share request.
func ShareFromPB(s *pb.Share) msg.Share {
	return msg.Share{Mode: msg.Mode(u8(s.GetMode())), Profile: prof(s.GetProfile()), Type: fss.Type(u8(s.GetType())), InBits: bits(s.GetInBits()), OutBits: bits(s.GetOutBits()),
		AlphaShare: s.GetAlphaShare(), BetaShare: s.GetBetaShare(), DeriveBeta: s.GetDeriveBeta(), Beta: s.GetBeta()}
}

// submitReqToPB converts a submission; shares travel packed, and the
// frames are asked for packed. The caller wipes PackedShares once sent.
func submitReqToPB(r *msg.SubmitRequest) *pb.SubmitRequest {
	o := &pb.SubmitRequest{Kind: uint32(r.Kind), Tier: uint32(r.Tier), Frame: r.Frame, Counter: r.Counter, Mismatch: r.Mismatch, PackFrames: true,
		Bulk: bulkToPB(r.Bulk), Corr: CorrToPB(r.Corr)}
	if len(r.Shares) > 0 {
		o.PackedShares = PackShares(make([]byte, 0, len(r.Shares)*shareRecord), r.Shares)
	}
	return o
}

// submitReqFromPB converts a wire submission (shares in either form, not
// both).
func submitReqFromPB(r *pb.SubmitRequest) (*msg.SubmitRequest, error) {
	o := &msg.SubmitRequest{Kind: msg.SubmitKind(u8(r.GetKind())), Tier: msg.Tier(u8(r.GetTier())), Frame: r.GetFrame(), Counter: r.GetCounter(),
		Mismatch: r.GetMismatch(), Bulk: bulkFromPB(r.GetBulk()), Corr: CorrFromPB(r.GetCorr())}
	switch {
	case len(r.GetShares()) > 0 && len(r.GetPackedShares()) > 0:
		return nil, fmt.Errorf("%w: shares and packed_shares are both set", module.ErrBadRequest)
	case len(r.GetPackedShares()) > 0:
		sh, err := UnpackShares(r.PackedShares)
		if err != nil {
			return nil, err
		}
		o.Shares = sh
	case len(r.GetShares()) > 0:
		o.Shares = make([]msg.Share, len(r.Shares))
		for i, s := range r.Shares {
			o.Shares[i] = ShareFromPB(s)
		}
	}
	return o, nil
}

func submitRespToPB(r *msg.SubmitResponse, packFrames bool) *pb.SubmitResponse {
	o := &pb.SubmitResponse{FirstCounter: r.FirstCounter, Count: uint32(r.Count),
		Accepted: r.Accepted, Counters: r.Counters, Reject: r.Reject}
	if packFrames {
		f := PackFrames(r.Frames)
		o.FrameData, o.FrameLens = f.Data, f.Lens
	} else {
		o.Frames = r.Frames
	}
	return o
}

func submitRespFromPB(r *pb.SubmitResponse) (*msg.SubmitResponse, Frames, error) {
	o := &msg.SubmitResponse{FirstCounter: r.GetFirstCounter(), Count: int(r.GetCount()), Frames: r.GetFrames(),
		Accepted: r.GetAccepted(), Counters: r.GetCounters(), Reject: r.GetReject()}
	var f Frames
	if len(r.GetFrameLens()) > 0 {
		f = Frames{Data: r.FrameData, Lens: r.FrameLens}
		if o.Frames = f.Split(); o.Frames == nil {
			return nil, f, fmt.Errorf("%w: frame lengths do not cover the frame data", ErrTransport)
		}
	} else if len(o.Frames) > 0 {
		f = PackFrames(o.Frames)
	}
	return o, f, nil
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
	if r.Corr != nil {
		return &pb.CollectResponse{Counter: r.Counter, Corr: corrSharesToPB(r.Corr)}
	}
	if r.Slab != nil {
		return &pb.CollectResponse{Counter: r.Counter, Mode: uint32(r.Mode), Slab: slabToPB(r.Slab)}
	}
	return &pb.CollectResponse{Counter: r.Counter, Mode: uint32(r.Mode), Key: r.Key, AlphaShare: r.AlphaShare, BetaShare: r.BetaShare,
		Evals: r.Evals, PairTag: r.PairTag[:]}
}

func collectRespFromPB(r *pb.CollectResponse) (*msg.CollectResponse, error) {
	if c := r.GetCorr(); c != nil {
		sh, err := CorrSharesFromPB(c)
		if err != nil {
			return nil, fmt.Errorf("%w: collect: %v", ErrTransport, err)
		}
		return &msg.CollectResponse{Counter: r.GetCounter(), Corr: sh}, nil
	}
	if s := r.GetSlab(); s != nil {
		sl, err := slabFromPB(s)
		if err != nil {
			return nil, err
		}
		return &msg.CollectResponse{Counter: sl.First, Mode: sl.Mode, Slab: sl}, nil
	}
	if len(r.GetPairTag()) != msg.PairTagSize {
		return nil, fmt.Errorf("%w: collect: a %d-byte pair tag, want %d", ErrTransport, len(r.GetPairTag()), msg.PairTagSize)
	}
	return &msg.CollectResponse{Counter: r.GetCounter(), Mode: msg.Mode(u8(r.GetMode())), Key: r.GetKey(),
		AlphaShare: r.GetAlphaShare(), BetaShare: r.GetBetaShare(), Evals: r.GetEvals(), PairTag: [msg.PairTagSize]byte(r.GetPairTag())}, nil
}

// n32 narrows a count; anything over MaxBulk·2 becomes MaxBulk+1 (refused
// by the module as outside 1..MaxBulk, naming the field).
func n32(v uint32) int {
	if v > 2*msg.MaxBulk {
		return msg.MaxBulk + 1
	}
	return int(v)
}

// bulkToPB converts a bulk request (the shares are the caller's: it wipes
// them once sent).
func bulkToPB(b *msg.Bulk) *pb.Bulk {
	if b == nil {
		return nil
	}
	return &pb.Bulk{Mode: uint32(b.Mode), Profile: uint32(b.Profile), Type: uint32(b.Type), InBits: uint32(b.InBits), OutBits: uint32(b.OutBits),
		N: uint32(min(max(b.N, 0), 2*msg.MaxBulk+1)), AlphaShares: b.AlphaShares, BetaShares: b.BetaShares,
		DeriveBeta: b.DeriveBeta, Beta: b.Beta, Group: uint32(min(max(b.Group, 0), msg.MaxGroup+1)), Betas: b.Betas}
}

// bulkFromPB converts a wire bulk request; the module checks its fields.
func bulkFromPB(b *pb.Bulk) *msg.Bulk {
	if b == nil {
		return nil
	}
	return &msg.Bulk{Mode: msg.Mode(u8(b.GetMode())), Profile: prof(b.GetProfile()), Type: fss.Type(u8(b.GetType())), InBits: bits(b.GetInBits()),
		OutBits: bits(b.GetOutBits()), N: n32(b.GetN()), AlphaShares: b.GetAlphaShares(), BetaShares: b.GetBetaShares(),
		DeriveBeta: b.GetDeriveBeta(), Beta: b.GetBeta(), Group: group(b.GetGroup()), Betas: b.GetBetas()}
}

// group narrows a wire group size; one out of range stays out of range
// (msg.MaxGroup+1) for the module to name.
func group(v uint32) int { return int(min(v, msg.MaxGroup+1)) }

// wipeBulk clears the shares of a wire bulk request.
func wipeBulk(b *pb.Bulk) {
	if b != nil {
		clear(b.AlphaShares)
		clear(b.BetaShares)
	}
}

// slabToPB converts a slab; the message holds the slab's buffers (no
// copy).
func slabToPB(s *msg.Slab) *pb.Slab {
	return &pb.Slab{First: s.First, N: uint32(s.N), Mode: uint32(s.Mode), Profile: uint32(s.Profile), Type: uint32(s.Params.Type),
		InBits: uint32(s.Params.InBits), OutBits: uint32(s.Params.OutBits), Stride: uint32(s.Stride),
		Keys: s.Keys, AlphaShares: s.AlphaShares, BetaShares: s.BetaShares, PairTags: s.PairTags, Group: uint32(max(s.Group, 0))}
}

// slabFromPB converts a wire slab, checking that its fields agree (N keys
// of the shape's stride, N pair tags, N shares of each or none); the slab
// holds the message's buffers.
func slabFromPB(s *pb.Slab) (*msg.Slab, error) {
	o := &msg.Slab{First: s.GetFirst(), N: n32(s.GetN()), Mode: msg.Mode(u8(s.GetMode())), Profile: prof(s.GetProfile()),
		Params: fss.Params{Type: fss.Type(u8(s.GetType())), InBits: bits(s.GetInBits()), OutBits: bits(s.GetOutBits())},
		Keys:   s.GetKeys(), AlphaShares: s.GetAlphaShares(), BetaShares: s.GetBetaShares(),
		PairTags: s.GetPairTags(), Group: group(s.GetGroup())}
	if s.GetStride() > 1<<20 {
		o.Stride = -1
	} else {
		o.Stride = int(s.GetStride())
	}
	if err := o.Check(); err != nil {
		return nil, fmt.Errorf("%w: collect: %v", ErrTransport, err)
	}
	if o.Mode != msg.Bound && o.Mode != msg.Derived {
		return nil, fmt.Errorf("%w: collect: a slab of mode %d", ErrTransport, o.Mode)
	}
	return o, nil
}

// wipeSlabPB clears the secrets of a wire slab.
func wipeSlabPB(s *pb.Slab) {
	if s != nil {
		clear(s.Keys)
		clear(s.AlphaShares)
		clear(s.BetaShares)
	}
}

// wide narrows a dimension; anything over MaxCorrWords becomes
// MaxCorrWords+1 (refused by the module, naming the field).
func wide(v uint32) int {
	if v > msg.MaxCorrWords {
		return msg.MaxCorrWords + 1
	}
	return int(v)
}

// CorrToPB converts a correlation shape (nil: nil).
func CorrToPB(c *msg.Correlation) *pb.Correlation {
	if c == nil {
		return nil
	}
	u := func(v int) uint32 { return uint32(min(max(v, 0), msg.MaxCorrWords+1)) }
	return &pb.Correlation{Kind: uint32(c.Kind), Ring: u(c.Ring), In: u(c.In), Out: u(c.Out), K: u(c.K), H: u(c.H), W: u(c.W),
		Part: uint32(c.Part), WeightFrom: c.WeightFrom, Relu: u(c.Relu), Ars: u(c.Ars), Shift: u(c.Shift), Maxpool: u(c.MaxPool)}
}

// CorrFromPB converts a wire correlation shape (nil: nil); the module
// checks its fields (msg.Correlation.Sizes).
func CorrFromPB(c *pb.Correlation) *msg.Correlation {
	if c == nil {
		return nil
	}
	return &msg.Correlation{Kind: msg.CorrKind(u8(c.GetKind())), Ring: bits(c.GetRing()), In: wide(c.GetIn()), Out: wide(c.GetOut()),
		K: wide(c.GetK()), H: wide(c.GetH()), W: wide(c.GetW()), Part: msg.CorrPart(u8(c.GetPart())), WeightFrom: c.GetWeightFrom(),
		Relu: wide(c.GetRelu()), Ars: wide(c.GetArs()), Shift: wide(c.GetShift()), MaxPool: wide(c.GetMaxpool())}
}

// corrSharesToPB converts one party's correlation shares; the message
// holds the shares' slices (no copy).
func corrSharesToPB(c *msg.CorrShares) *pb.CorrShares {
	return &pb.CorrShares{Counter: c.Counter, Blocks: uint32(c.Blocks), Corr: CorrToPB(&c.Corr), A: c.A, R: c.R, Z: c.Z, PairTag: c.PairTag[:],
		Packs: c.Packs}
}

// CorrSharesFromPB converts wire correlation shares, checking that they
// have the sizes their shape gives (msg.Correlation.Sizes) and a 16-byte
// pair tag; the result holds the message's slices.
func CorrSharesFromPB(c *pb.CorrShares) (*msg.CorrShares, error) {
	shape := CorrFromPB(c.GetCorr())
	na, nr, nz, err := shape.Sizes()
	if err != nil {
		return nil, fmt.Errorf("correlation: %v", err)
	}
	switch shape.Part {
	case msg.CorrWeight:
		nr, nz = 0, 0
	case msg.CorrInput:
		na = 0
	}
	if len(c.GetA()) != na || len(c.GetR()) != nr || len(c.GetZ()) != nz {
		return nil, fmt.Errorf("correlation: %d, %d, %d words of A, R, Z, want %d, %d, %d", len(c.GetA()), len(c.GetR()), len(c.GetZ()), na, nr, nz)
	}
	if len(c.GetPairTag()) != msg.PairTagSize {
		return nil, fmt.Errorf("correlation: a %d-byte pair tag, want %d", len(c.GetPairTag()), msg.PairTagSize)
	}
	packs := 0
	if shape.Kind == msg.CorrLlamaGates {
		packs = shape.PackBytes()
	}
	if len(c.GetPacks()) != packs {
		return nil, fmt.Errorf("correlation: %d bytes of packs, want %d", len(c.GetPacks()), packs)
	}
	blocks, _ := shape.Blocks()
	if int(c.GetBlocks()) != blocks {
		return nil, fmt.Errorf("correlation: %d blocks, want %d for its shape", c.GetBlocks(), blocks)
	}
	return &msg.CorrShares{Counter: c.GetCounter(), Blocks: blocks, Corr: *shape, A: c.GetA(), R: c.GetR(), Z: c.GetZ(),
		Packs: c.GetPacks(), PairTag: [msg.PairTagSize]byte(c.GetPairTag())}, nil
}

// wipeCorrPB clears the shares of a wire correlation.
func wipeCorrPB(c *pb.CorrShares) {
	if c != nil {
		clear(c.A)
		clear(c.R)
		clear(c.Z)
		clear(c.Packs)
	}
}
