package service

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/proto/modulepb"
)

// FuzzAppRequests: any KeyRequests message from an application — plain
// or packed — yields one job per request, each valid or refused, and
// never panics.
func FuzzAppRequests(f *testing.F) {
	seed := &pb.KeyRequests{Requests: []*pb.KeyRequest{{Id: 1, Mode: "bound", Tier: "mac", Type: "dpf", InBits: 8, OutBits: 8}},
		Packed: &pb.PackedRequests{Ids: []uint64{2}, Shapes: []byte{1, 2, 1, 8, 8, 0}, AlphaShares: []uint64{1}, BetaShares: []uint64{2},
			Counts: []uint32{1}, Betas: []uint64{0}, PointLens: []uint32{1}, Points: []uint64{3}}}
	b, _ := proto.Marshal(seed)
	f.Add(b)
	b, _ = proto.Marshal(&pb.KeyRequests{Requests: []*pb.KeyRequest{{Id: 3, Mode: ModeCorrelation,
		Corr: &modulepb.Correlation{Kind: 2, Ring: 32, In: 1, Out: 2, K: 3, H: 5, W: 5, Part: 2, WeightFrom: 9}}}})
	f.Add(b)
	b, _ = proto.Marshal(&pb.KeyRequests{Requests: []*pb.KeyRequest{
		{Id: 4, Mode: "bound", Type: "dcf", Profile: "llama", InBits: 8, OutBits: 8, Group: 3, BetaShares: []uint64{1, 2, 3}},
		{Id: 5, Mode: "derived", Type: "dcf", Profile: "llama", InBits: 8, OutBits: 8, Count: 7, Group: 2, Betas: []uint64{1, 2}},
		{Id: 6, Mode: "derived", Type: "dcf", Profile: "llama", InBits: 8, OutBits: 8, Count: 3, Group: 5, DeriveBeta: true}}})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var rs pb.KeyRequests
		if proto.Unmarshal(b, &rs) != nil {
			return
		}
		check := func(r *pb.KeyRequest, _ uint64, perr error) bool {
			if perr != nil {
				return true
			}
			j, err := newJob(r)
			if err != nil {
				return true
			}
			if j.corr != nil {
				if _, _, _, err := j.corr.Sizes(); err != nil || j.blocks < 1 || j.blocks > MaxCorrBlocks || j.item.Corr == nil || len(j.shares) != 0 {
					t.Fatalf("accepted correlation %+v (%d counters): %v", j.corr, j.blocks, err)
				}
				return true
			}
			if j.keys() < 1 || j.keys() > MaxCount || len(j.points) > MaxPoints {
				t.Fatalf("accepted request with %d keys, %d points", j.keys(), len(j.points))
			}
			for _, s := range j.shares {
				if s.InBits < 1 || s.InBits > 64 || s.OutBits < 1 || s.OutBits > 64 {
					t.Fatalf("accepted widths %d/%d", s.InBits, s.OutBits)
				}
			}
			if g := int(j.item.Group); g > 1 || j.group > 1 {
				// A payload vector: llama, bound or derived, G within
				// bounds, every element of the right count and width, and
				// the job's keys one bulk.
				s := j.shares[0]
				ks := msg.KeySizeG(s.Profile, s.Params(), g)
				if g != j.group || g > msg.MaxGroup || s.Profile != msg.Llama || s.Mode == msg.Consume ||
					(s.Mode == msg.Bound && len(j.betaVec) != g) || (s.Mode == msg.Derived && len(j.item.Betas) != g && !(j.item.DeriveBeta && len(j.item.Betas) == 0)) ||
					j.keys()*ks > msg.MaxSlabBytes {
					t.Fatalf("accepted vector request %+v", r)
				}
				for _, v := range append(append([]uint64(nil), j.betaVec...), j.item.Betas...) {
					if v&^prg.Mask(s.OutBits) != 0 {
						t.Fatalf("accepted an element wider than %d bits", s.OutBits)
					}
				}
			}
			return true
		}
		for _, r := range rs.Requests {
			check(r, r.GetId(), nil)
		}
		if rs.Packed != nil {
			eachPacked(rs.Packed, check)
		}
	})
}

// FuzzPeerBatch: any Batch from the peer link is refused or prepared by
// party 1 without a panic; a refused batch leaves the session state and
// the module's counter where they were.
func FuzzPeerBatch(f *testing.F) {
	d, st := openModule(f, 1, filepath.Join(f.TempDir(), "m1.db"), []byte("provisioning secret for tests!!"))
	f.Cleanup(func() { st.Close() })
	p, err := New(Config{Party: 1, Module: socket.Local(d), MatchTimeout: time.Millisecond, PeerPlaintext: true})
	// (a refusal that keeps the session, follower.skip, moves it on by design)
	if err != nil {
		f.Fatal(err)
	}
	it := &pb.BatchItem{Id: 7, Mode: uint32(msg.Bound), Type: 1, InBits: 8, OutBits: 8, Count: 1}
	ci := &pb.BatchItem{Id: 7, Mode: ItemCorrelation, InBits: 16, Count: 3, Corr: &modulepb.Correlation{Kind: 1, Ring: 16, In: 2, Out: 2, Part: 1}}
	tr := newTranscript(nil, nil)
	vi := &pb.BatchItem{Id: 7, Mode: uint32(msg.Derived), Type: 0x12, InBits: 8, OutBits: 8, Count: 9, Group: 2, Betas: []uint64{1, 2}}
	for _, items := range [][]*pb.BatchItem{{it}, {it, it}, nil, {ci}, {it, ci}, {vi}, {it, vi}} {
		b, _ := proto.Marshal(&pb.Batch{Seq: 1, Tier: uint32(msg.MAC), Items: items, Transcript: chain(tr, 1, msg.MAC, 0, items, false)})
		f.Add(b)
		if len(items) > 0 {
			b, _ = proto.Marshal(&pb.Batch{Seq: 1, Tier: uint32(msg.MAC), PackedItems: packItems(items), Transcript: chain(tr, 1, msg.MAC, 0, items, true)})
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var b pb.Batch
		if proto.Unmarshal(raw, &b) != nil {
			return
		}
		// The transcript is unkeyed: an attacker on a plaintext link can
		// always make it match, so make it match.
		items := b.Items
		if b.PackedItems != nil {
			items, _ = unpackItems(b.PackedItems) // refused below if malformed
		}
		b.Transcript = chain(tr, b.Seq, msg.Tier(b.Tier), b.FirstCounter, items, b.PackedItems != nil)
		j, _ := newJob(&pb.KeyRequest{Id: 7, Mode: "bound", Tier: "mac", Type: "dpf", InBits: 8, OutBits: 8})
		p.pend.add(j)
		fl := &follower{p: p, run: 1, early: true, transcript: tr}
		pr := fl.prepare(context.Background(), &b)
		expected, last := fl.expected, fl.lastSeq
		if pr.rep != nil && !pr.soft && (expected != 0 || last != 0) {
			t.Fatalf("refused batch moved the session: expected %d last %d", expected, last)
		}
		if pr.soft {
			// Skipped for unmatched ids: the session and the module moved
			// past the batch, no frame opened; the filler is abandoned.
			if pr.rep.ErrorClass != ErrClassUnmatched || last != b.Seq || expected != pr.last+1 || len(pr.js) != 0 {
				t.Fatalf("skipped batch: %+v, expected %d last %d", pr.rep, expected, last)
			}
			p.mod.Submit(context.Background(), &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: pr.last})
		}
		p.pend.fail("", []uint64{7}, ErrClassUnavailable, "done")
	})
}
