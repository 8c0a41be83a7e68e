// Packed requests: many requests of a few shapes in one message, each
// checked as its own KeyRequest would be.

package service

import (
	"fmt"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// packedShape is the size of one request's shape in PackedRequests.
const packedShape = 6

// simplePacked reports whether a packed message is well formed and carries
// no points (consume mode), the shapes initPacked reads directly.
func simplePacked(pk *pb.PackedRequests) bool {
	n := len(pk.Ids)
	return len(pk.Shapes) == n*packedShape && len(pk.AlphaShares) == n && len(pk.BetaShares) == n && len(pk.Counts) == n &&
		len(pk.Betas) == n && len(pk.PointLens) == 0
}

// packedRequest sets r to request i of a packed message whose Shapes, Ids,
// AlphaShares, BetaShares, Counts and Betas hold at least i+1 entries
// (points, if any, are the caller's), as eachPacked hands it on.
func packedRequest(pk *pb.PackedRequests, i int, r *pb.KeyRequest) error {
	sh := pk.Shapes[i*packedShape : (i+1)*packedShape]
	*r = pb.KeyRequest{Id: pk.Ids[i], Mode: msg.Mode(sh[0]).String(), Type: fss.Type(sh[2] & 15).String(), Profile: msg.Profile(sh[2] >> 4).String(),
		InBits: uint32(sh[3]), OutBits: uint32(sh[4]), DeriveBeta: sh[5] == 1,
		AlphaShare: pk.AlphaShares[i], BetaShare: pk.BetaShares[i], Count: pk.Counts[i], Beta: pk.Betas[i]}
	if sh[1] != 0 {
		r.Tier = msg.Tier(sh[1]).String()
	}
	if sh[5] > 1 {
		return badf("request %d (packed index %d): derive_beta: shape byte %d is not 0 or 1", pk.Ids[i], i, sh[5])
	}
	return nil
}

// initPacked sets j to request i of a simplePacked message when it is a
// valid bound or derived request — exactly the job init would make of
// packedRequest's KeyRequest — without building that request. It returns
// false, leaving j to be reset, for anything else (every refusal, and
// consume mode), which then takes the long way for its error message.
func (j *job) initPacked(pk *pb.PackedRequests, i int) bool {
	sh := pk.Shapes[i*packedShape : (i+1)*packedShape]
	mode, tier, typ, prof, in, out, db := msg.Mode(sh[0]), msg.Tier(sh[1]), fss.Type(sh[2]&15), msg.Profile(sh[2]>>4), int(sh[3]), int(sh[4]), sh[5]
	if db > 1 || (typ != fss.DPF && typ != fss.DCF) || in < 1 || in > 64 || out < 1 || out > 64 ||
		(prof != msg.KordV1 && (prof != msg.Llama || typ != fss.DCF)) {
		return false
	}
	as, bs, count, beta := pk.AlphaShares[i], pk.BetaShares[i], pk.Counts[i], pk.Betas[i]
	base := msg.Share{Mode: mode, Profile: prof, Type: typ, InBits: in, OutBits: out}
	j.itemv.Count = 1
	switch mode {
	case msg.Bound:
		if tier == 0 {
			tier = DefaultTier
		}
		if (tier != msg.Keystream && tier != msg.MAC && tier != msg.BatchMAC) || count > 1 || db != 0 || beta != 0 ||
			as&^prg.Mask(in) != 0 || bs&^prg.Mask(out) != 0 {
			return false
		}
		j.tier = tier
		base.AlphaShare, base.BetaShare = as, bs
		j.one[0] = base
		j.shares = j.one[:]
	case msg.Derived:
		if tier != 0 || as != 0 || bs != 0 || count > MaxCount || (db == 1 && beta != 0) || beta&^prg.Mask(out) != 0 {
			return false
		}
		n := max(count, 1)
		base.DeriveBeta, base.Beta = db == 1, beta
		j.itemv.Count, j.itemv.DeriveBeta, j.itemv.Beta = n, db == 1, beta
		j.one[0], j.derived = base, int(n)
		j.shares = j.one[:]
	default:
		return false
	}
	j.id = pk.Ids[i]
	j.itemv.Id, j.itemv.Mode, j.itemv.Type, j.itemv.InBits, j.itemv.OutBits = j.id, uint32(mode), uint32(sh[2]), uint32(in), uint32(out)
	j.item = &j.itemv
	return true
}

// eachPacked hands fn each packed request in order, as a KeyRequest that is
// only valid during the call (newJob copies what it keeps), or, for a
// request that cannot be read, its id and an error naming the field; it
// stops when fn returns false. A malformed message yields one error per
// id it lists (the application gets a bad_request reply for each), or
// one with id 0 when it lists none.
func eachPacked(pk *pb.PackedRequests, fn func(r *pb.KeyRequest, id uint64, err error) bool) bool {
	n := len(pk.Ids)
	var r pb.KeyRequest
	if err := packedLengths(pk); err != nil {
		if n == 0 {
			return fn(nil, 0, badf("packed request: %v", err))
		}
		for i, id := range pk.Ids {
			if !fn(nil, id, badf("request %d (packed index %d): %v", id, i, err)) {
				return false
			}
		}
		return true
	}
	off := 0
	for i := 0; i < n; i++ {
		perr := packedRequest(pk, i, &r)
		if len(pk.PointLens) > 0 {
			l := int(pk.PointLens[i])
			if l > len(pk.Points)-off {
				// The points of this request and every later one are
				// out of reach.
				for k := i; k < n; k++ {
					if !fn(nil, pk.Ids[k], badf("request %d (packed index %d): point_lens: the points list ends before this request's points (%d at offset %d of %d)",
						pk.Ids[k], k, pk.PointLens[k], off, len(pk.Points))) {
						return false
					}
				}
				return true
			}
			if l > 0 {
				r.Points = pk.Points[off : off+l : off+l]
			}
			off += l
		}
		if perr != nil {
			if !fn(nil, pk.Ids[i], perr) {
				return false
			}
			continue
		}
		if !fn(&r, r.Id, nil) {
			return false
		}
	}
	return true
}

// packedLengths checks that a packed message's lists have one entry per
// id; the error names the first that does not.
func packedLengths(pk *pb.PackedRequests) error {
	n := len(pk.Ids)
	switch {
	case len(pk.Shapes) != n*packedShape:
		return fmt.Errorf("shapes: %d bytes for %d ids (want %d per request)", len(pk.Shapes), n, packedShape)
	case len(pk.AlphaShares) != n:
		return fmt.Errorf("alpha_shares: %d entries for %d ids", len(pk.AlphaShares), n)
	case len(pk.BetaShares) != n:
		return fmt.Errorf("beta_shares: %d entries for %d ids", len(pk.BetaShares), n)
	case len(pk.Counts) != n:
		return fmt.Errorf("counts: %d entries for %d ids", len(pk.Counts), n)
	case len(pk.Betas) != n:
		return fmt.Errorf("betas: %d entries for %d ids", len(pk.Betas), n)
	case len(pk.PointLens) != 0 && len(pk.PointLens) != n:
		return fmt.Errorf("point_lens: %d entries for %d ids (want none or one per id)", len(pk.PointLens), n)
	case n == 0 && (len(pk.Points) > 0 || len(pk.PointLens) > 0):
		return fmt.Errorf("ids: none, but other lists are not empty")
	}
	return nil
}
