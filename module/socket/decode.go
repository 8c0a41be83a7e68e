package socket

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/internal/pbwire"
	pb "github.com/kord-fss/kord/proto/modulepb"
)

// decodeResponse decodes a ModuleResponse read into b, a buffer of its
// own: the byte fields of a collect_range result or of a collect's slab
// (the batch's keys, all but a few bytes of the message) are slices of b
// rather than copies, so b must not be reused. A result in the usual
// shape — error_class and collect_range (or a collect holding only a
// slab) with its fields once each, integers packed — is read here; any other result, and a response that is not a plain list of
// results, go through proto.Unmarshal as they are (the same outcome,
// with copies), so nothing is accepted that proto.Unmarshal would refuse.
func decodeResponse(b []byte) (*pb.ModuleResponse, error) {
	resp := &pb.ModuleResponse{}
	rest := b
	for len(rest) > 0 {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 || num != 1 || typ != protowire.BytesType {
			return unmarshalResponse(b)
		}
		rest = rest[n:]
		rb, n := protowire.ConsumeBytes(rest)
		if n < 0 {
			return unmarshalResponse(b)
		}
		rest = rest[n:]
		r, ok := fastResult(rb)
		if !ok {
			r = &pb.Result{}
			if err := proto.Unmarshal(rb, r); err != nil {
				return nil, err
			}
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}

func unmarshalResponse(b []byte) (*pb.ModuleResponse, error) {
	var resp pb.ModuleResponse
	if err := proto.Unmarshal(b, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// fastResult reads a Result holding at most error_class and one
// collect_range or one collect with a slab; ok is false for anything else.
func fastResult(b []byte) (*pb.Result, bool) {
	var class uint64
	var cr *pb.CollectRangeResponse
	var co *pb.CollectResponse
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			class, n = protowire.ConsumeVarint(b)
		case num == 6 && typ == protowire.BytesType && cr == nil && co == nil:
			var v []byte
			v, n = protowire.ConsumeBytes(b)
			if n >= 0 {
				var ok bool
				if co, ok = fastCollectSlab(v); !ok {
					return nil, false
				}
			}
		case num == 9 && typ == protowire.BytesType && cr == nil && co == nil:
			var v []byte
			v, n = protowire.ConsumeBytes(b)
			if n >= 0 {
				var ok bool
				if cr, ok = fastCollectRange(v); !ok {
					return nil, false
				}
			}
		default:
			return nil, false
		}
		if n < 0 {
			return nil, false
		}
		b = b[n:]
	}
	switch {
	case co != nil:
		return &pb.Result{ErrorClass: uint32(class), Op: &pb.Result_Collect{Collect: co}}, true
	case cr != nil:
		return &pb.Result{ErrorClass: uint32(class), Op: &pb.Result_CollectRange{CollectRange: cr}}, true
	}
	return nil, false
}

// fastCollectSlab reads a CollectResponse holding counter, mode (varints)
// and a slab, each at most once; the slab's keys and pair tags are slices
// of b. ok is false for anything else (a per-counter collect).
func fastCollectSlab(b []byte) (*pb.CollectResponse, bool) {
	r := &pb.CollectResponse{}
	var seen uint64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num < 1 || num > 63 || seen&(1<<num) != 0 {
			return nil, false
		}
		seen |= 1 << num
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			r.Counter, n = protowire.ConsumeVarint(b)
		case num == 2 && typ == protowire.VarintType:
			var v uint64
			v, n = protowire.ConsumeVarint(b)
			if v > 1<<32-1 {
				return nil, false
			}
			r.Mode = uint32(v)
		case num == 8 && typ == protowire.BytesType:
			var v []byte
			v, n = protowire.ConsumeBytes(b)
			if n >= 0 {
				var ok bool
				if r.Slab, ok = fastSlab(v); !ok {
					return nil, false
				}
			}
		default:
			return nil, false
		}
		if n < 0 {
			return nil, false
		}
		b = b[n:]
	}
	if r.Slab == nil {
		return nil, false
	}
	return r, true
}

// fastSlab reads a Slab whose fields each appear at most once, integers
// as varints and the shares packed; keys and pair tags are slices of b.
func fastSlab(b []byte) (*pb.Slab, bool) {
	s := &pb.Slab{}
	var seen uint64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num < 1 || num > 11 || seen&(1<<num) != 0 {
			return nil, false
		}
		seen |= 1 << num
		b = b[n:]
		if num <= 7 {
			if typ != protowire.VarintType {
				return nil, false
			}
			v, n := protowire.ConsumeVarint(b)
			if n < 0 || (num != 1 && v > 1<<32-1) {
				return nil, false
			}
			b = b[n:]
			switch num {
			case 1:
				s.First = v
			case 2:
				s.N = uint32(v)
			case 3:
				s.Mode = uint32(v)
			case 4:
				s.Type = uint32(v)
			case 5:
				s.InBits = uint32(v)
			case 6:
				s.OutBits = uint32(v)
			case 7:
				s.Stride = uint32(v)
			}
			continue
		}
		if typ != protowire.BytesType {
			return nil, false
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		ok := true
		switch num {
		case 8:
			s.Keys = v[:len(v):len(v)]
		case 9:
			s.AlphaShares, ok = pbwire.Packed64(v)
		case 10:
			s.BetaShares, ok = pbwire.Packed64(v)
		case 11:
			s.PairTags = v[:len(v):len(v)]
		}
		if !ok {
			return nil, false
		}
	}
	return s, true
}

// fastCollectRange reads a CollectRangeResponse whose fields each appear
// at most once, the repeated integers packed; modes, keys and pair tags
// are slices of b.
func fastCollectRange(b []byte) (*pb.CollectRangeResponse, bool) {
	r := &pb.CollectRangeResponse{}
	ok := pbwire.EachBytesField(b, 8, func(num protowire.Number, v []byte) bool {
		ok := true
		switch num {
		case 1:
			r.Modes = v[:len(v):len(v)]
		case 2:
			r.Keys = v[:len(v):len(v)]
		case 3:
			r.KeyLens, ok = pbwire.Packed32(v)
		case 4:
			r.AlphaShares, ok = pbwire.Packed64(v)
		case 5:
			r.BetaShares, ok = pbwire.Packed64(v)
		case 6:
			r.Evals, ok = pbwire.Packed64(v)
		case 7:
			r.EvalLens, ok = pbwire.Packed32(v)
		case 8:
			r.PairTags = v[:len(v):len(v)]
		}
		return ok
	})
	if !ok {
		return nil, false
	}
	return r, true
}
