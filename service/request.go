// Requests: an application's KeyRequest parsed into a job, every field
// checked against the limits and modes, and refused naming the field.

package service

import (
	"errors"
	"fmt"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Limits on one application request.
const (
	MaxCount  = 4096    // derived keys per request
	MaxPoints = 1 << 16 // consume-mode points per request
	// MaxCorrBlocks bounds the counters one correlation request takes
	// (msg.Correlation.Blocks: two words a counter).
	MaxCorrBlocks = 1 << 21
)

// ModeCorrelation is the mode of a correlation request (KeyRequest.corr)
// and ItemCorrelation the mode code of its batch item: one derived
// multiplication correlation (msg.SubmitCorrelation), drawn inside both
// modules, nothing per item between the sites but its batch header.
const (
	ModeCorrelation = "correlation"
	ItemCorrelation = 16
)

var (
	errBad       = errors.New("bad request")
	errDupID     = fmt.Errorf("%w: duplicate id", errBad)
	errExhausted = errors.New("resource exhausted")
)

func badf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBad, fmt.Sprintf(format, args...))
}

// newJob validates an application request; the error names the field.
func newJob(r *pb.KeyRequest) (*job, error) {
	j := new(job)
	if err := j.init(r); err != nil {
		return nil, err
	}
	return j, nil
}

// init is newJob into j (a zero job, typically one of a slab).
func (j *job) init(r *pb.KeyRequest) error {
	if r == nil {
		return badf("empty request")
	}
	if r.Corr != nil || lowerASCII(r.Mode) == ModeCorrelation {
		return j.initCorr(r)
	}
	mode, err := msg.ParseMode(lowerASCII(r.Mode))
	if err != nil {
		return badf("mode: %v", err)
	}
	typ, err := fss.ParseType(lowerASCII(r.Type))
	if err != nil || (typ != fss.DPF && typ != fss.DCF) {
		return badf("type: %q is not dpf or dcf", r.Type)
	}
	prof, err := msg.ParseProfile(lowerASCII(r.Profile))
	if err != nil {
		return badf("profile: %q is not kord-v1 or llama", r.Profile)
	}
	if prof == msg.Llama && typ != fss.DCF {
		return badf("type: the llama profile has only dcf keys (LLAMA's FSS has no DPF), got %q", r.Type)
	}
	if r.InBits < 1 || r.InBits > 64 {
		return badf("in_bits: %d is outside 1..64", r.InBits)
	}
	if r.OutBits < 1 || r.OutBits > 64 {
		return badf("out_bits: %d is outside 1..64", r.OutBits)
	}
	in, out := int(r.InBits), int(r.OutBits)
	if r.Group > 1 || len(r.Betas) != 0 || len(r.BetaShares) != 0 && len(r.AlphaShares) == 0 {
		return j.initVec(r, mode, prof, typ)
	}
	j.id = r.Id
	// The batch item's type carries the profile in its high nibble
	// (msg.TypeByte; kord-v1's is the type alone), so the parties' item
	// comparisons, bulk runs and transcripts cover it.
	j.itemv.Id, j.itemv.Mode, j.itemv.Type, j.itemv.InBits, j.itemv.OutBits, j.itemv.Count = r.Id, uint32(mode), uint32(msg.TypeByte(prof, typ)), r.InBits, r.OutBits, 1
	j.item = &j.itemv
	base := msg.Share{Mode: mode, Profile: prof, Type: typ, InBits: in, OutBits: out}
	if mode == msg.Derived {
		if r.Tier != "" {
			return badf("tier: derived keys send no frame; leave tier empty")
		}
		if r.AlphaShare != 0 || r.BetaShare != 0 || len(r.Points) != 0 || len(r.AlphaShares) != 0 || len(r.BetaShares) != 0 {
			return badf("alpha_share/beta_share/alpha_shares/beta_shares/points: not used in derived mode")
		}
		n := r.Count
		if n == 0 {
			n = 1
		}
		if n > MaxCount {
			return badf("count: %d is over %d", n, MaxCount)
		}
		if r.DeriveBeta && r.Beta != 0 {
			return badf("beta: must be zero with derive_beta")
		}
		if r.Beta&^prg.Mask(out) != 0 {
			return badf("beta: does not fit in %d output bits", out)
		}
		base.DeriveBeta, base.Beta = r.DeriveBeta, r.Beta
		j.item.Count, j.item.DeriveBeta, j.item.Beta = n, r.DeriveBeta, r.Beta
		j.one[0], j.derived = base, int(n)
		j.shares = j.one[:]
		return nil
	}
	j.tier = DefaultTier
	if r.Tier != "" {
		if j.tier, err = msg.ParseTier(lowerASCII(r.Tier)); err != nil {
			return badf("tier: %v", err)
		}
	}
	if mode == msg.Bound && (r.Count > 1 || len(r.AlphaShares) != 0 || len(r.BetaShares) != 0) {
		// A bound bulk: count keys of one shape and tier as one request.
		if r.AlphaShare != 0 || r.BetaShare != 0 || r.DeriveBeta || r.Beta != 0 || len(r.Points) != 0 {
			return badf("alpha_share/beta_share/derive_beta/beta/points: not used in a bound bulk (alpha_shares, beta_shares)")
		}
		if int(r.Count) != len(r.AlphaShares) {
			return badf("count: %d, with %d alpha_shares (want one per key)", r.Count, len(r.AlphaShares))
		}
		return j.initBulk(&BoundBulk{ID: r.Id, Tier: j.tier, Profile: prof, Params: fss.Params{Type: typ, InBits: in, OutBits: out},
			AlphaShares: r.AlphaShares, BetaShares: r.BetaShares})
	}
	if r.Count > 1 || r.DeriveBeta || r.Beta != 0 {
		return badf("count/derive_beta/beta: only for derived mode")
	}
	if len(r.AlphaShares) != 0 || len(r.BetaShares) != 0 {
		return badf("alpha_shares/beta_shares: only for a bound bulk")
	}
	if r.AlphaShare&^prg.Mask(in) != 0 {
		return badf("alpha_share: does not fit in %d input bits", in)
	}
	if r.BetaShare&^prg.Mask(out) != 0 {
		return badf("beta_share: does not fit in %d output bits", out)
	}
	if mode == msg.Consume {
		if len(r.Points) == 0 || len(r.Points) > MaxPoints {
			return badf("points: %d points, want 1..%d in consume mode", len(r.Points), MaxPoints)
		}
		for i, x := range r.Points {
			if x&^prg.Mask(in) != 0 {
				return badf("points[%d]: does not fit in %d input bits", i, in)
			}
		}
		j.points = append([]uint64(nil), r.Points...)
	} else if len(r.Points) != 0 {
		return badf("points: only for consume mode")
	}
	base.AlphaShare, base.BetaShare = r.AlphaShare, r.BetaShare
	j.one[0] = base
	j.shares = j.one[:]
	return nil
}

// initVec is init for a request whose payload is a vector (group ≥ 2,
// betas or beta_shares given): llama profile, bound or derived, the whole
// request one bulk of the module (so its key bytes are bounded by
// msg.MaxSlabBytes).
func (j *job) initVec(r *pb.KeyRequest, mode msg.Mode, prof msg.Profile, typ fss.Type) error {
	in, out := int(r.InBits), int(r.OutBits)
	switch {
	case r.Group < 2 || r.Group > msg.MaxGroup:
		return badf("group: %d is outside 2..%d, and betas/beta_shares are only for a payload vector", r.Group, msg.MaxGroup)
	case prof != msg.Llama:
		return badf("group: a payload vector needs profile llama, not %q", r.Profile)
	case mode != msg.Bound && mode != msg.Derived:
		return badf("mode: a payload vector is for bound or derived mode, not %v", mode)
	case r.Beta != 0 || r.BetaShare != 0:
		return badf("beta/beta_share: must be zero with a payload vector (group %d): the payload is betas or beta_shares", r.Group)
	case len(r.Points) != 0:
		return badf("points: only for consume mode")
	case len(r.AlphaShares) != 0:
		return badf("alpha_shares: a payload vector's bound request is one key (alpha_share, beta_shares)")
	}
	g := int(r.Group)
	mb := prg.Mask(out)
	j.id, j.group = r.Id, g
	j.itemv = pb.BatchItem{Id: r.Id, Mode: uint32(mode), Type: uint32(msg.TypeByte(prof, typ)), InBits: r.InBits, OutBits: r.OutBits, Count: 1,
		Group: r.Group}
	j.item = &j.itemv
	base := msg.Share{Mode: mode, Profile: prof, Type: typ, InBits: in, OutBits: out}
	ks := msg.KeySizeG(prof, base.Params(), g)
	if mode == msg.Derived {
		switch {
		case r.Tier != "":
			return badf("tier: derived keys send no frame; leave tier empty")
		case r.AlphaShare != 0 || len(r.BetaShares) != 0:
			return badf("alpha_share/beta_shares: not used in derived mode")
		case r.DeriveBeta && len(r.Betas) != 0:
			return badf("betas: must be empty with derive_beta (the modules draw every element)")
		case !r.DeriveBeta && len(r.Betas) != g:
			return badf("betas: %d elements, want group = %d", len(r.Betas), g)
		}
		for i, v := range r.Betas {
			if v&^mb != 0 {
				return badf("betas[%d]: does not fit in %d output bits", i, out)
			}
		}
		n := max(r.Count, 1)
		if n > MaxCount {
			return badf("count: %d is over %d", n, MaxCount)
		}
		if int(n) > msg.MaxSlabBytes/ks {
			return badf("count: %d keys of %d bytes (group %d) pass the limit of %d key bytes per request; ask for at most %d", n, ks, g, msg.MaxSlabBytes, msg.MaxSlabBytes/ks)
		}
		j.itemv.Count, j.itemv.DeriveBeta = n, r.DeriveBeta
		base.DeriveBeta = r.DeriveBeta
		if !r.DeriveBeta {
			j.itemv.Betas = append([]uint64(nil), r.Betas...)
		}
		j.one[0], j.derived = base, int(n)
		j.shares = j.one[:]
		return nil
	}
	j.tier = DefaultTier
	if r.Tier != "" {
		var err error
		if j.tier, err = msg.ParseTier(lowerASCII(r.Tier)); err != nil {
			return badf("tier: %v", err)
		}
	}
	switch {
	case r.Count > 1 || r.DeriveBeta || len(r.Betas) != 0:
		return badf("count/derive_beta/betas: only for derived mode")
	case r.AlphaShare&^prg.Mask(in) != 0:
		return badf("alpha_share: does not fit in %d input bits", in)
	case len(r.BetaShares) != g:
		return badf("beta_shares: %d shares, want group = %d", len(r.BetaShares), g)
	}
	for i, v := range r.BetaShares {
		if v&^mb != 0 {
			return badf("beta_shares[%d]: does not fit in %d output bits", i, out)
		}
	}
	base.AlphaShare = r.AlphaShare
	j.one[0] = base
	j.shares = j.one[:]
	j.betaVec = append([]uint64(nil), r.BetaShares...)
	return nil
}

// initCorr is init for a correlation request: mode "correlation" with a
// shape in corr and every key field empty.
func (j *job) initCorr(r *pb.KeyRequest) error {
	if lowerASCII(r.Mode) != ModeCorrelation {
		return badf("mode: a request with corr must have mode %q, not %q", ModeCorrelation, r.Mode)
	}
	if r.Corr == nil {
		return badf("corr: missing (mode %q)", ModeCorrelation)
	}
	if r.Type != "" || r.Tier != "" || r.InBits != 0 || r.OutBits != 0 || r.AlphaShare != 0 || r.BetaShare != 0 ||
		r.Count != 0 || r.DeriveBeta || r.Beta != 0 || len(r.Points) != 0 || r.Profile != "" || len(r.AlphaShares) != 0 || len(r.BetaShares) != 0 {
		return badf("type/tier/in_bits/out_bits/alpha_share/beta_share/count/derive_beta/beta/points/profile: must be empty in a correlation request")
	}
	c := socket.CorrFromPB(r.Corr)
	blocks, err := c.Blocks()
	if err != nil {
		return badf("%v", err)
	}
	if blocks > MaxCorrBlocks {
		return badf("corr: takes %d counters, over %d", blocks, MaxCorrBlocks)
	}
	j.id, j.corr, j.blocks = r.Id, c, blocks
	j.itemv = pb.BatchItem{Id: r.Id, Mode: ItemCorrelation, InBits: uint32(c.Ring), Count: uint32(blocks), Corr: socket.CorrToPB(c)}
	j.item = &j.itemv
	return nil
}

// lowerASCII is s in lower case: the names of modes, types and tiers are
// read without regard to case (docs/api.md, "Field rules").
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for k := i; k < len(b); k++ {
				if 'A' <= b[k] && b[k] <= 'Z' {
					b[k] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
