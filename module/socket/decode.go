package socket

import (
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
	var err error
	if !pbwire.EachRepeated(b, 1, func(rb []byte) bool {
		r, ok := fastResult(rb)
		if !ok {
			r = &pb.Result{}
			if err = proto.Unmarshal(rb, r); err != nil {
				return false
			}
		}
		resp.Results = append(resp.Results, r)
		return true
	}) {
		if err != nil {
			return nil, err
		}
		return unmarshalResponse(b)
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
	var class uint32
	var op any // *pb.CollectResponse or *pb.CollectRangeResponse: a oneof, at most one
	if !pbwire.Each(b, 9, func(f pbwire.Field) bool {
		if f.Num == 1 {
			var ok bool
			class, ok = f.Uint32()
			return ok
		}
		v, ok := f.Bytes()
		if !ok || op != nil {
			return false
		}
		switch f.Num {
		case 6:
			var co *pb.CollectResponse
			co, ok = fastCollectSlab(v)
			op = co
		case 9:
			var cr *pb.CollectRangeResponse
			cr, ok = fastCollectRange(v)
			op = cr
		default:
			return false
		}
		return ok
	}) {
		return nil, false
	}
	switch op := op.(type) {
	case *pb.CollectResponse:
		return &pb.Result{ErrorClass: class, Op: &pb.Result_Collect{Collect: op}}, true
	case *pb.CollectRangeResponse:
		return &pb.Result{ErrorClass: class, Op: &pb.Result_CollectRange{CollectRange: op}}, true
	}
	return nil, false
}

// fastCollectSlab reads a CollectResponse holding counter, mode (varints)
// and a slab, each at most once; the slab's keys and pair tags are slices
// of b. ok is false for anything else (a per-counter collect).
func fastCollectSlab(b []byte) (*pb.CollectResponse, bool) {
	r := &pb.CollectResponse{}
	ok := pbwire.Each(b, 8, func(f pbwire.Field) bool {
		var ok bool
		switch f.Num {
		case 1:
			r.Counter, ok = f.Uint64()
		case 2:
			r.Mode, ok = f.Uint32()
		case 8:
			var v []byte
			if v, ok = f.Bytes(); ok {
				r.Slab, ok = fastSlab(v)
			}
		}
		return ok
	})
	if !ok || r.Slab == nil {
		return nil, false
	}
	return r, true
}

// fastSlab reads a Slab whose fields each appear at most once, integers
// as varints and the shares packed; keys and pair tags are slices of b.
func fastSlab(b []byte) (*pb.Slab, bool) {
	s := &pb.Slab{}
	ok := pbwire.Each(b, 14, func(f pbwire.Field) bool {
		var ok bool
		switch f.Num {
		case 1:
			s.First, ok = f.Uint64()
		case 2:
			s.N, ok = f.Uint32()
		case 3:
			s.Mode, ok = f.Uint32()
		case 4:
			s.Type, ok = f.Uint32()
		case 5:
			s.InBits, ok = f.Uint32()
		case 6:
			s.OutBits, ok = f.Uint32()
		case 7:
			s.Stride, ok = f.Uint32()
		case 8:
			s.Keys, ok = f.Bytes()
		case 9:
			s.AlphaShares, ok = f.Packed64()
		case 10:
			s.BetaShares, ok = f.Packed64()
		case 11:
			s.PairTags, ok = f.Bytes()
		case 12:
			s.Profile, ok = f.Uint32()
		case 13:
			s.Group, ok = f.Uint32()
		case 14:
			var v uint64
			v, ok = f.Uint64()
			s.KeysFd = v != 0
		}
		return ok
	})
	if !ok {
		return nil, false
	}
	return s, true
}

// fastCollectRange reads a CollectRangeResponse whose fields each appear
// at most once, the repeated integers packed; modes, keys and pair tags
// are slices of b.
func fastCollectRange(b []byte) (*pb.CollectRangeResponse, bool) {
	r := &pb.CollectRangeResponse{}
	ok := pbwire.Each(b, 8, func(f pbwire.Field) bool {
		var ok bool
		switch f.Num {
		case 1:
			r.Modes, ok = f.Bytes()
		case 2:
			r.Keys, ok = f.Bytes()
		case 3:
			r.KeyLens, ok = f.Packed32()
		case 4:
			r.AlphaShares, ok = f.Packed64()
		case 5:
			r.BetaShares, ok = f.Packed64()
		case 6:
			r.Evals, ok = f.Packed64()
		case 7:
			r.EvalLens, ok = f.Packed32()
		case 8:
			r.PairTags, ok = f.Bytes()
		}
		return ok
	})
	if !ok {
		return nil, false
	}
	return r, true
}
