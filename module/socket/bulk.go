package socket

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/modulepb"
)

// The hot path of a batch — own shares in, the peer's frames in, the
// outputs out — goes over the socket as one call each with packed fields
// (concatenated bytes and packed integers), not as a message per key.

// Frames is a list of frames packed into one buffer.
type Frames struct {
	Data []byte
	Lens []uint32
}

// PackFrames packs fs into one buffer.
func PackFrames(fs [][]byte) Frames {
	n := 0
	for _, f := range fs {
		n += len(f)
	}
	out := Frames{Data: make([]byte, 0, n), Lens: make([]uint32, len(fs))}
	for i, f := range fs {
		out.Data = append(out.Data, f...)
		out.Lens[i] = uint32(len(f))
	}
	return out
}

// Count is the number of frames.
func (f Frames) Count() int { return len(f.Lens) }

// Valid reports whether the lengths cover the data exactly.
func (f Frames) Valid() bool {
	n := uint64(0)
	for _, l := range f.Lens {
		n += uint64(l)
	}
	return n == uint64(len(f.Data))
}

// Split returns the frames as slices of Data (no copy); nil if invalid.
func (f Frames) Split() [][]byte {
	if !f.Valid() {
		return nil
	}
	out := make([][]byte, len(f.Lens))
	off := 0
	for i, l := range f.Lens {
		out[i] = f.Data[off : off+int(l) : off+int(l)]
		off += int(l)
	}
	return out
}

// shareRecord is the size of one packed share.
const shareRecord = 29

// PackShares appends shares as fixed records (module.proto, packed_shares)
// to dst. Widths over 255 are packed as 0, which the module refuses.
func PackShares(dst []byte, shares []msg.Share) []byte {
	for _, s := range shares {
		var flags byte
		if s.DeriveBeta {
			flags = 1
		}
		dst = append(dst, byte(s.Mode), packType(s.Profile, s.Type), narrow(s.InBits), narrow(s.OutBits), flags)
		dst = binary.LittleEndian.AppendUint64(dst, s.AlphaShare)
		dst = binary.LittleEndian.AppendUint64(dst, s.BetaShare)
		dst = binary.LittleEndian.AppendUint64(dst, s.Beta)
	}
	return dst
}

// packType is a packed share's type byte: msg.TypeByte (the profile in the
// high nibble), or 0, which the module refuses, for a type or profile that
// does not fit its nibble.
func packType(pr msg.Profile, t fss.Type) byte {
	if pr > 15 || t > 15 {
		return 0
	}
	return msg.TypeByte(pr, t)
}

func narrow(v int) byte {
	if v < 0 || v > 255 {
		return 0
	}
	return byte(v)
}

// UnpackShares decodes packed shares.
func UnpackShares(b []byte) ([]msg.Share, error) {
	if len(b)%shareRecord != 0 {
		return nil, fmt.Errorf("%w: packed_shares: %d bytes is not a multiple of %d", module.ErrBadRequest, len(b), shareRecord)
	}
	out := make([]msg.Share, len(b)/shareRecord)
	for i := range out {
		r := b[i*shareRecord : (i+1)*shareRecord]
		if r[4]&^1 != 0 {
			return nil, fmt.Errorf("%w: packed_shares[%d]: unknown flags %#x", module.ErrBadRequest, i, r[4])
		}
		out[i] = msg.Share{Mode: msg.Mode(r[0]), Profile: msg.Profile(r[1] >> 4), Type: fss.Type(r[1] & 15), InBits: int(r[2]), OutBits: int(r[3]), DeriveBeta: r[4]&1 != 0,
			AlphaShare: binary.LittleEndian.Uint64(r[5:]), BetaShare: binary.LittleEndian.Uint64(r[13:]), Beta: binary.LittleEndian.Uint64(r[21:])}
	}
	return out, nil
}

// CollectRange collects the outputs at counters First … First+Count-1.
// Points is nil or has one entry per counter (nil except in consume mode).
type CollectRange struct {
	First  uint64
	Count  int
	Points [][]uint64
	// Expect (a re-collect after a party restart; nil: an ordinary
	// collect): the share request each counter's output must have been
	// generated for. The module then hands out only outputs it handed out
	// before, each only if generated for exactly that request, and
	// refuses the call otherwise (RangeRecollector).
	Expect []msg.Share
}

// FramesResult answers a Frames call: how many frames were accepted and,
// if not all, why the next one was refused.
type FramesResult struct {
	Accepted int
	Reject   string
}

// maxRange bounds the counters of one CollectRange.
const maxRange = MaxCalls

// peerFrames submits the frames in order until one is refused.
func peerFrames(ctx context.Context, dev module.Device, f *Frames) (*FramesResult, error) {
	if !f.Valid() || len(f.Lens) > MaxCalls {
		return nil, fmt.Errorf("%w: peer frames: %d lengths do not cover %d bytes (or too many)", module.ErrBadRequest, len(f.Lens), len(f.Data))
	}
	out := &FramesResult{}
	req := msg.SubmitRequest{Kind: msg.SubmitPeerFrame}
	off := 0
	for _, l := range f.Lens {
		req.Frame = f.Data[off : off+int(l) : off+int(l)]
		off += int(l)
		r, err := dev.Submit(ctx, &req)
		if err != nil {
			return nil, err
		}
		if !r.Accepted {
			out.Reject = r.Reject
			return out, nil
		}
		out.Accepted++
	}
	return out, nil
}

// checkRange validates a CollectRange.
func checkRange(r *CollectRange) error {
	if r.Count < 1 || r.Count > maxRange {
		return fmt.Errorf("%w: collect range: count %d, want 1..%d", module.ErrBadRequest, r.Count, maxRange)
	}
	if r.Points != nil && len(r.Points) != r.Count {
		return fmt.Errorf("%w: collect range: %d point lists for %d counters", module.ErrBadRequest, len(r.Points), r.Count)
	}
	if r.Expect != nil && len(r.Expect) != r.Count {
		return fmt.Errorf("%w: collect range: %d expected requests for %d counters", module.ErrBadRequest, len(r.Expect), r.Count)
	}
	if r.First+uint64(r.Count) < r.First {
		return fmt.Errorf("%w: collect range: counters overflow", module.ErrBadRequest)
	}
	return nil
}

// RangeCollector is a module that collects a run of counters in one call
// (module.Durable); emit gets each output, valid only during the call.
type RangeCollector interface {
	CollectRange(ctx context.Context, first uint64, count int, points [][]uint64, emit func(*msg.CollectResponse)) error
}

// RangeRecollector is a module that re-collects a run of counters only
// for the requests their outputs were generated for (module.Durable).
type RangeRecollector interface {
	RecollectRange(ctx context.Context, first uint64, count int, points [][]uint64, expect []msg.Share, emit func(*msg.CollectResponse)) error
}

// collectRange collects each counter of r in order and hands each output
// to emit; it stops at the first error.
func collectRange(ctx context.Context, dev module.Device, r *CollectRange, emit func(*msg.CollectResponse)) error {
	if err := checkRange(r); err != nil {
		return err
	}
	if r.Expect != nil {
		rc, ok := dev.(RangeRecollector)
		if !ok {
			return fmt.Errorf("%w: collect range: this module does not check re-collected outputs against their request", module.ErrBadRequest)
		}
		return rc.RecollectRange(ctx, r.First, r.Count, r.Points, r.Expect, emit)
	}
	if rc, ok := dev.(RangeCollector); ok {
		return rc.CollectRange(ctx, r.First, r.Count, r.Points, emit)
	}
	req := msg.CollectRequest{}
	for i := 0; i < r.Count; i++ {
		req.Counter = r.First + uint64(i)
		req.Points = nil
		if r.Points != nil {
			req.Points = r.Points[i]
		}
		c, err := dev.Collect(ctx, &req)
		if err != nil {
			return err
		}
		emit(c)
	}
	return nil
}

// rangeToPB encodes a CollectRange.
func rangeToPB(r *CollectRange) *pb.CollectRangeRequest {
	o := &pb.CollectRangeRequest{First: r.First, Count: uint32(r.Count)}
	for _, s := range r.Expect {
		o.Expect = append(o.Expect, ShareToPB(s))
	}
	if r.Points != nil {
		o.PointLens = make([]uint32, len(r.Points))
		for i, p := range r.Points {
			o.PointLens[i] = uint32(len(p))
			o.Points = append(o.Points, p...)
		}
	}
	return o
}

// rangeFromPB decodes a CollectRange.
func rangeFromPB(r *pb.CollectRangeRequest) (*CollectRange, error) {
	o := &CollectRange{First: r.GetFirst(), Count: int(r.GetCount())}
	if r.GetCount() > maxRange {
		o.Count = 0 // refused by checkRange
	}
	if ex := r.GetExpect(); len(ex) > 0 {
		if len(ex) != o.Count {
			return nil, fmt.Errorf("%w: collect range: %d expected requests for %d counters", module.ErrBadRequest, len(ex), o.Count)
		}
		o.Expect = make([]msg.Share, len(ex))
		for i, s := range ex {
			o.Expect[i] = ShareFromPB(s)
		}
	}
	if lens := r.GetPointLens(); len(lens) > 0 {
		if len(lens) != o.Count {
			return nil, fmt.Errorf("%w: collect range: %d point lists for %d counters", module.ErrBadRequest, len(lens), o.Count)
		}
		pts := r.GetPoints()
		o.Points = make([][]uint64, len(lens))
		off := uint64(0)
		for i, l := range lens {
			if off+uint64(l) > uint64(len(pts)) {
				return nil, fmt.Errorf("%w: collect range: point lists overrun the %d points", module.ErrBadRequest, len(pts))
			}
			if l > 0 {
				o.Points[i] = pts[off : off+uint64(l) : off+uint64(l)]
			}
			off += uint64(l)
		}
		if off != uint64(len(pts)) {
			return nil, fmt.Errorf("%w: collect range: %d points left over", module.ErrBadRequest, uint64(len(pts))-off)
		}
	} else if len(r.GetPoints()) > 0 {
		return nil, fmt.Errorf("%w: collect range: points without point_lens", module.ErrBadRequest)
	}
	return o, nil
}

// rangeRespBuilder accumulates outputs into one CollectRangeResponse.
type rangeRespBuilder struct {
	out      pb.CollectRangeResponse
	anyEvals bool
}

func newRangeRespBuilder(n int) *rangeRespBuilder {
	b := &rangeRespBuilder{}
	b.out.Modes = make([]byte, 0, n)
	b.out.KeyLens = make([]uint32, 0, n)
	b.out.AlphaShares = make([]uint64, 0, n)
	b.out.BetaShares = make([]uint64, 0, n)
	b.out.EvalLens = make([]uint32, 0, n)
	b.out.PairTags = make([]byte, 0, n*msg.PairTagSize)
	return b
}

func (b *rangeRespBuilder) add(c *msg.CollectResponse) {
	if b.out.Keys == nil && len(c.Key) > 0 {
		// Keys of one batch are mostly of one shape: size for all.
		b.out.Keys = make([]byte, 0, len(c.Key)*cap(b.out.KeyLens))
	}
	b.out.Modes = append(b.out.Modes, byte(c.Mode))
	b.out.Keys = append(b.out.Keys, c.Key...)
	b.out.KeyLens = append(b.out.KeyLens, uint32(len(c.Key)))
	b.out.AlphaShares = append(b.out.AlphaShares, c.AlphaShare)
	b.out.BetaShares = append(b.out.BetaShares, c.BetaShare)
	b.out.Evals = append(b.out.Evals, c.Evals...)
	b.out.EvalLens = append(b.out.EvalLens, uint32(len(c.Evals)))
	b.out.PairTags = append(b.out.PairTags, c.PairTag[:]...)
	if len(c.Evals) > 0 {
		b.anyEvals = true
	}
}

func (b *rangeRespBuilder) done() *pb.CollectRangeResponse {
	if !b.anyEvals {
		b.out.EvalLens = nil
	}
	return &b.out
}

// rangeRespFromPB decodes the outputs of counters first … first+count-1;
// the keys are slices of one buffer.
func rangeRespFromPB(r *pb.CollectRangeResponse, first uint64, count int) ([]msg.CollectResponse, error) {
	modes, keys, klens := r.GetModes(), r.GetKeys(), r.GetKeyLens()
	as, bs, evals, elens, tags := r.GetAlphaShares(), r.GetBetaShares(), r.GetEvals(), r.GetEvalLens(), r.GetPairTags()
	if len(modes) != count || len(klens) != count || len(as) != count || len(bs) != count || (len(elens) != 0 && len(elens) != count) ||
		len(tags) != count*msg.PairTagSize {
		return nil, fmt.Errorf("%w: collect range: %d outputs for %d counters", ErrTransport, len(klens), count)
	}
	out := make([]msg.CollectResponse, count)
	ko, eo := uint64(0), uint64(0)
	for i := range out {
		o := &out[i]
		o.Counter, o.Mode, o.AlphaShare, o.BetaShare = first+uint64(i), msg.Mode(modes[i]), as[i], bs[i]
		o.PairTag = [msg.PairTagSize]byte(tags[i*msg.PairTagSize:])
		if l := uint64(klens[i]); l > 0 {
			if ko+l > uint64(len(keys)) {
				return nil, fmt.Errorf("%w: collect range: keys overrun", ErrTransport)
			}
			o.Key = keys[ko : ko+l : ko+l]
			ko += l
		}
		if len(elens) > 0 {
			if l := uint64(elens[i]); l > 0 {
				if eo+l > uint64(len(evals)) {
					return nil, fmt.Errorf("%w: collect range: evaluations overrun", ErrTransport)
				}
				o.Evals = evals[eo : eo+l : eo+l]
				eo += l
			}
		}
	}
	if ko != uint64(len(keys)) || eo != uint64(len(evals)) {
		return nil, fmt.Errorf("%w: collect range: trailing output bytes", ErrTransport)
	}
	return out, nil
}

// appendRangeMsg appends to dst the response message (length prefix
// included) of head's results followed by the result of collecting r,
// encoded as proto.Marshal would encode it, the keys copied straight from
// the module into dst. buf is dst grown, out the message within it (it
// starts after the room left for the headers, whose size depends on the
// total). On an error (the collect failed) nothing in buf is the answer.
func appendRangeMsg(ctx context.Context, dev module.Device, r *CollectRange, head *pb.ModuleResponse, dst []byte) (buf, out []byte, err error) {
	dst = append(dst[:0], 0, 0, 0, 0)
	for _, res := range head.Results {
		dst = protowire.AppendTag(dst, 1, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(proto.Size(res)))
		if dst, err = (proto.MarshalOptions{UseCachedSize: true}).MarshalAppend(dst, res); err != nil {
			return dst, nil, err
		}
	}
	pre := len(dst)
	// Room for: results tag+len, collect_range tag+len, modes tag+len+bytes,
	// keys tag+len.
	const vmax = binary.MaxVarintLen64
	gap := 3*(1+vmax) + r.Count + 1 + vmax
	dst = append(dst, make([]byte, gap)...)
	keysAt := len(dst)
	sc := rangeScratchPool.Get().(*rangeScratch)
	defer func() { sc.reset(); rangeScratchPool.Put(sc) }()
	err = collectRange(ctx, dev, r, func(c *msg.CollectResponse) {
		dst = append(dst, c.Key...)
		sc.modes = append(sc.modes, byte(c.Mode))
		sc.keyLens = append(sc.keyLens, uint64(len(c.Key)))
		sc.as = append(sc.as, c.AlphaShare)
		sc.bs = append(sc.bs, c.BetaShare)
		sc.evals = append(sc.evals, c.Evals...)
		sc.evalLens = append(sc.evalLens, uint64(len(c.Evals)))
		sc.tags = append(sc.tags, c.PairTag[:]...)
		sc.anyEvals = sc.anyEvals || len(c.Evals) > 0
	})
	if err != nil {
		return dst, nil, err
	}
	keysLen := len(dst) - keysAt
	tail := len(dst)
	dst = appendPacked(dst, 3, sc.keyLens)
	dst = appendPacked(dst, 4, sc.as)
	dst = appendPacked(dst, 5, sc.bs)
	dst = appendPacked(dst, 6, sc.evals)
	if sc.anyEvals {
		dst = appendPacked(dst, 7, sc.evalLens)
	}
	if len(sc.tags) > 0 {
		dst = protowire.AppendTag(dst, 8, protowire.BytesType)
		dst = protowire.AppendBytes(dst, sc.tags)
	}
	tailLen := len(dst) - tail
	// The CollectRangeResponse: modes, keys (both omitted when empty), tail.
	var hdr [3*(1+vmax) + 1 + vmax]byte
	keysHdr := hdr[:0]
	if keysLen > 0 {
		keysHdr = protowire.AppendTag(keysHdr, 2, protowire.BytesType)
		keysHdr = protowire.AppendVarint(keysHdr, uint64(keysLen))
	}
	modesLen := 0
	if len(sc.modes) > 0 {
		modesLen = protowire.SizeTag(1) + protowire.SizeBytes(len(sc.modes))
	}
	crLen := modesLen + len(keysHdr) + keysLen + tailLen
	resLen := protowire.SizeTag(9) + protowire.SizeBytes(crLen)
	h := protowire.AppendTag(keysHdr[len(keysHdr):], 1, protowire.BytesType)
	h = protowire.AppendVarint(h, uint64(resLen))
	h = protowire.AppendTag(h, 9, protowire.BytesType)
	h = protowire.AppendVarint(h, uint64(crLen))
	if len(sc.modes) > 0 {
		h = protowire.AppendTag(h, 1, protowire.BytesType)
		h = protowire.AppendVarint(h, uint64(len(sc.modes)))
	}
	// Lay out, right before the keys: the prefix and head's results, the
	// headers above, the modes and the keys header.
	at := keysAt - len(keysHdr)
	copy(dst[at:], keysHdr)
	at -= len(sc.modes)
	copy(dst[at:], sc.modes)
	at -= len(h)
	copy(dst[at:], h)
	start := at - pre
	copy(dst[start:at], dst[:pre])
	clear(dst[:start])
	n := len(dst) - start - 4
	if n > MaxMessage {
		return dst, nil, ErrTooLarge
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(n))
	return dst, dst[start:], nil
}

func appendPacked(dst []byte, num protowire.Number, v []uint64) []byte {
	if len(v) == 0 {
		return dst
	}
	n := 0
	for _, x := range v {
		n += protowire.SizeVarint(x)
	}
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(n))
	for _, x := range v {
		dst = protowire.AppendVarint(dst, x)
	}
	return dst
}

// rangeScratch holds a collect's per-key fields while its keys are
// written; reset wipes the shares and evaluations.
type rangeScratch struct {
	modes, tags       []byte
	keyLens, evalLens []uint64
	as, bs, evals     []uint64
	anyEvals          bool
}

func (s *rangeScratch) reset() {
	clear(s.as)
	clear(s.bs)
	clear(s.evals)
	s.modes, s.tags, s.keyLens, s.evalLens = s.modes[:0], s.tags[:0], s.keyLens[:0], s.evalLens[:0]
	s.as, s.bs, s.evals = s.as[:0], s.bs[:0], s.evals[:0]
	s.anyEvals = false
}

var rangeScratchPool = sync.Pool{New: func() any { return new(rangeScratch) }}
