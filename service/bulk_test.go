package service

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// TestBulkRuns: the split of a batch into module requests. Each run is
// homogeneous (one bulk shape, or consume items), two neighbouring runs
// could not be one (another shape, or past msg.MaxBulk keys), the runs
// cover the items in order, and party 1 derives the same split from the
// items as it receives them (packed or not).
func TestBulkRuns(t *testing.T) {
	it := func(id uint64, mode msg.Mode, typ fss.Type, in, count uint32, db bool, beta uint64) *pb.BatchItem {
		return &pb.BatchItem{Id: id, Mode: uint32(mode), Type: uint32(typ), InBits: in, OutBits: in, Count: count, DeriveBeta: db, Beta: beta}
	}
	bound := func(id uint64, typ fss.Type, in uint32) *pb.BatchItem { return it(id, msg.Bound, typ, in, 1, false, 0) }
	var items []*pb.BatchItem
	id := uint64(0)
	add := func(k int, f func(id uint64) *pb.BatchItem) {
		for range k {
			id++
			items = append(items, f(id))
		}
	}
	add(8, func(id uint64) *pb.BatchItem { return bound(id, fss.DPF, 32) })                        // a bulk of 8
	add(1, func(id uint64) *pb.BatchItem { return bound(id, fss.DCF, 32) })                        // short: per key…
	add(2, func(id uint64) *pb.BatchItem { return it(id, msg.Consume, fss.DCF, 32, 1, false, 0) }) // …with the consume items
	add(1, func(id uint64) *pb.BatchItem { return it(id, msg.Derived, fss.DCF, 32, 5, true, 0) })
	add(1, func(id uint64) *pb.BatchItem { return it(id, msg.Derived, fss.DCF, 32, 3, true, 0) })        // 8 derived keys: a bulk
	add(1, func(id uint64) *pb.BatchItem { return it(id, msg.Derived, fss.DCF, 32, 2, false, 5) })       // public β: short…
	add(1, func(id uint64) *pb.BatchItem { return bound(id, fss.DCF, 32) })                              // …with a bound one
	add(4, func(id uint64) *pb.BatchItem { return it(id, msg.Derived, fss.DPF, 16, MaxCount, true, 0) }) // msg.MaxBulk keys
	add(1, func(id uint64) *pb.BatchItem { return it(id, msg.Derived, fss.DPF, 16, 1, true, 0) })        // one past it
	want := []uint32{8, 3, 2, 2, 4, 1}
	if got := bulkRuns(items); !slices.Equal(got, want) {
		t.Fatalf("runs %v, want %v", got, want)
	}
	un, err := unpackItems(packItems(items))
	if err != nil {
		t.Fatal(err)
	}
	if got := bulkRuns(un); !slices.Equal(got, want) {
		t.Fatalf("party 1's runs from the packed items %v, want %v", got, want)
	}

	rng := rand.New(rand.NewPCG(7, 8))
	for n := 0; n < 2000; n++ {
		items := make([]*pb.BatchItem, 1+rng.IntN(60))
		for i := range items {
			if i > 0 && rng.IntN(4) != 0 { // runs of one shape
				q := items[i-1]
				items[i] = it(uint64(i), msg.Mode(q.Mode), fss.Type(q.Type), q.InBits, q.Count, q.DeriveBeta, q.Beta)
				continue
			}
			mode := []msg.Mode{msg.Bound, msg.Bound, msg.Bound, msg.Derived, msg.Consume}[rng.IntN(5)]
			count := uint32(1)
			if mode == msg.Derived {
				count = uint32([]int{1, 2, 9, MaxCount}[rng.IntN(4)])
			}
			items[i] = it(uint64(i), mode, fss.Type(1+rng.IntN(2)), uint32(8<<rng.IntN(2)), count, false, 0)
			if mode == msg.Derived {
				items[i].DeriveBeta = rng.IntN(2) == 0
			}
		}
		runs := bulkRuns(items)
		at := 0
		prevBulk := true
		for r, l := range runs {
			run := items[at : at+int(l)]
			bulk := isBulkRun(run)
			if !bulk && !prevBulk {
				t.Fatalf("runs %v: two per-key runs side by side (%d)", runs, r)
			}
			keys := 0
			for _, x := range run {
				keys += itemKeys(x)
			}
			if bulk && (keys > msg.MaxBulk || keys < minBulk) {
				t.Fatalf("bulk run %d holds %d keys", r, keys)
			}
			if bulk && at+int(l) < len(items) {
				next := items[at+int(l)]
				k0, _ := bulkKeyOf(run[0])
				if k, ok := bulkKeyOf(next); ok && k == k0 && keys+itemKeys(next) <= msg.MaxBulk {
					t.Fatalf("runs %v: bulk run %d stops before an item it could hold", runs, r)
				}
			}
			if !bulk {
				// A per-key run holds no run of one shape that could be a bulk.
				for i := 0; i < len(run); {
					k0, ok0 := bulkKeyOf(run[i])
					j, keys := i, 0
					for j < len(run) {
						k, ok := bulkKeyOf(run[j])
						if ok != ok0 || k != k0 {
							break
						}
						keys += itemKeys(run[j])
						j++
					}
					if ok0 && keys >= minBulk && (i > 0 || j < len(run)) {
						t.Fatalf("runs %v: per-key run %d holds %d keys of one shape", runs, r, keys)
					}
					i = j
				}
			}
			prevBulk = bulk
			at += int(l)
		}
		if at != len(items) {
			t.Fatalf("runs %v cover %d of %d items", runs, at, len(items))
		}
		segs := segmentsOf(nil, nil)
		if len(segs) != 1 || segs[0].bulk {
			t.Fatalf("no runs: %+v, want one per-key segment", segs)
		}
	}
}

// peerBatches records, at party 1, the batches party 0 sent: their runs
// and how many frames they carried.
type peerBatches struct {
	mu      sync.Mutex
	runs    [][]uint32
	frames  []int
	perKeys int // batches without runs
}

type batchSpy struct {
	grpc.ServerStream
	pb *peerBatches
}

func (s *batchSpy) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if b := m.(*pb.PeerMsg).GetBatch(); b != nil {
		s.pb.mu.Lock()
		if len(b.Runs) == 0 {
			s.pb.perKeys++
		}
		s.pb.runs = append(s.pb.runs, slices.Clone(b.Runs))
		s.pb.frames = append(s.pb.frames, len(b.FrameLens))
		s.pb.mu.Unlock()
	}
	return nil
}

// spiedSites is pairOfSitesWith whose party 1 records party 0's batches.
func spiedSites(t *testing.T, c Config) ([2]*site, *peerBatches) {
	spy := &peerBatches{}
	icpt := grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if strings.HasSuffix(info.FullMethod, "/Session") {
			ss = &batchSpy{ServerStream: ss, pb: spy}
		}
		return h(srv, ss)
	})
	return pairOfSitesWith(t, c, icpt), spy
}

// rawReplies sends reqs on a raw Keys stream of addr (packed replies;
// stride_replies as given) and returns each id's keys, shares and
// counters, and how many messages carried key_stride.
type rawKey struct {
	key     []byte
	counter uint64
	a, b    uint64
}

func rawReplies(t *testing.T, addr string, reqs []*pb.KeyRequest, stride bool) (map[uint64][]rawKey, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	st, err := pb.NewKeySourceClient(conn).Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&pb.KeyRequests{Requests: reqs, PackedReplies: true, StrideReplies: stride}); err != nil {
		t.Fatal(err)
	}
	out := map[uint64][]rawKey{}
	strided := 0
	for len(out) < len(reqs) {
		m, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range m.Replies {
			t.Fatalf("reply %d not packed: %v", r.Id, r.Error)
		}
		pk := m.Packed
		if pk == nil {
			continue
		}
		if pk.KeyStride != 0 {
			strided++
			if !stride {
				t.Fatal("a client that did not ask for stride_replies got key_stride")
			}
			if len(pk.KeyLens) != 0 {
				t.Fatal("key_stride with key_lens")
			}
		}
		k, off := 0, 0
		for i, id := range pk.Ids {
			for range pk.Counts[i] {
				l := int(pk.KeyStride)
				if l == 0 {
					l = int(pk.KeyLens[k])
				}
				rk := rawKey{key: slices.Clone(pk.Keys[off : off+l]), counter: pk.Counters[k]}
				if len(pk.AlphaShares) > 0 {
					rk.a, rk.b = pk.AlphaShares[k], pk.BetaShares[k]
				}
				out[id] = append(out[id], rk)
				off += l
				k++
			}
		}
		if off != len(pk.Keys) || k != len(pk.Counters) {
			t.Fatalf("packed replies: %d of %d key bytes, %d of %d keys", off, len(pk.Keys), k, len(pk.Counters))
		}
	}
	return out, strided
}

// recvAll reads n replies from site 1's client stream (the stride form:
// the client asks for it).
func recvAll(t *testing.T, s *site, reqs []*pb.KeyRequest) map[uint64]*client.Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := s.app.Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SendBatch(reqs); err != nil {
		t.Fatal(err)
	}
	out := map[uint64]*client.Reply{}
	for range reqs {
		r, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if r.Err != nil {
			t.Fatalf("request %d: %v", r.ID, r.Err)
		}
		out[r.ID] = r
	}
	return out
}

// bulkCase streams one class of requests through both sites — site 0 on
// a raw stream (stride as given), site 1 through the client — and checks
// every pair: Eval(0,k0,x) + Eval(1,k1,x) = f(x).
func bulkCase(t *testing.T, s [2]*site, p fss.Params, tier string, derived bool, base uint64, n int, stride bool) (strided int) {
	t.Helper()
	var ws []want
	var reqs [2][]*pb.KeyRequest
	if derived {
		for b := range 2 {
			for i := range n {
				reqs[b] = append(reqs[b], client.Derived(base+uint64(i), p, 1+i%5, 0, true))
			}
		}
	} else {
		ws, reqs = boundRequests(p, base, n, tier)
	}
	var got0 map[uint64][]rawKey
	var got1 map[uint64]*client.Reply
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		got1 = recvAll(t, s[1], reqs[1])
	}()
	got0, strided = rawReplies(t, s[0].addr, reqs[0], stride)
	wg.Wait()
	ma, mb := prg.Mask(p.InBits), prg.Mask(p.OutBits)
	for i := range n {
		id := base + uint64(i)
		k0s, r1 := got0[id], got1[id]
		if r1 == nil || len(k0s) != len(r1.Shares) || len(k0s) == 0 {
			t.Fatalf("request %d: %d / %v keys", id, len(k0s), r1)
		}
		for k, k0 := range k0s {
			s1 := r1.Shares[k]
			if k0.counter != s1.Counter {
				t.Fatalf("request %d key %d: counters %d / %d", id, k, k0.counter, s1.Counter)
			}
			key0, err := fss.ParseKey(k0.key)
			if err != nil {
				t.Fatalf("request %d key %d: %v", id, k, err)
			}
			if derived {
				checkPair(t, key0, s1.Key, (k0.a+s1.AlphaShare)&ma, (k0.b+s1.BetaShare)&mb)
			} else {
				checkPair(t, key0, s1.Key, ws[i].alpha, ws[i].beta)
			}
		}
	}
	return strided
}

// TestBulkBatchesEachTier: bound batches of each tier and derived batches
// go to the modules as bulks (Batch.runs set; one frame per bulk run) and
// their pairs reach both applications verified, site 0's keys in the
// stride form (key_stride, no key_lens) that its client asked for.
func TestBulkBatchesEachTier(t *testing.T) {
	s, spy := spiedSites(t, Config{Batch: 32, InFlight: 2})
	base := uint64(1)
	bulks := 0
	for _, p := range []fss.Params{{Type: fss.DPF, InBits: 32, OutBits: 32}, {Type: fss.DCF, InBits: 20, OutBits: 13}} {
		for _, c := range []struct {
			tier    string
			derived bool
		}{{"otp", false}, {"mac", false}, {"batchmac", false}, {"", true}} {
			spy.mu.Lock()
			before := len(spy.runs)
			spy.mu.Unlock()
			const n = 64
			if st := bulkCase(t, s, p, c.tier, c.derived, base, n, true); st == 0 {
				t.Fatalf("%v %s: no message in the stride form", p, c.tier)
			}
			base += n
			spy.mu.Lock()
			for i := before; i < len(spy.runs); i++ {
				if len(spy.runs[i]) != 1 {
					t.Fatalf("%v %s: batch of one shape in %d runs", p, c.tier, len(spy.runs[i]))
				}
				// A bound bulk sends one frame (keys of the per-key path
				// one each, but for batchmac); a derived one none.
				if want := boolInt(!c.derived); spy.frames[i] != want && (c.derived || spy.runs[i][0] >= minBulk) {
					t.Fatalf("%v %s: a bulk batch with %d frames, want %d", p, c.tier, spy.frames[i], want)
				}
				bulks += boolInt(c.derived || spy.runs[i][0] >= minBulk)
			}
			if len(spy.runs) == before {
				t.Fatalf("%v %s: no batch seen", p, c.tier)
			}
			spy.mu.Unlock()
		}
	}
	if spy.perKeys != 0 || bulks == 0 {
		t.Fatalf("%d batches without runs, %d bulks", spy.perKeys, bulks)
	}
}

// TestOldClientGetsKeyLens: a client that does not ask for stride_replies
// gets key_lens, never key_stride, for the same bulk batches, and the
// keys pair.
func TestOldClientGetsKeyLens(t *testing.T) {
	s := pairOfSites(t, Config{Batch: 32, InFlight: 2})
	p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 8}
	if st := bulkCase(t, s, p, "batchmac", false, 1, 50, false); st != 0 {
		t.Fatalf("%d messages with key_stride", st)
	}
	if st := bulkCase(t, s, p, "", true, 100, 50, false); st != 0 {
		t.Fatalf("%d messages with key_stride", st)
	}
}

// TestPerKeyPathWithoutBulk: with a party 1 that does not read runs (as
// one that predates them), party 0 sends none and both sites take the
// per-key path; every pair still verifies.
func TestPerKeyPathWithoutBulk(t *testing.T) {
	s, spy := spiedSites(t, Config{Batch: 16, InFlight: 2, noBulk: true})
	p := fss.Params{Type: fss.DCF, InBits: 12, OutBits: 12}
	bulkCase(t, s, p, "otp", false, 1, 40, true)
	bulkCase(t, s, p, "", true, 100, 20, true)
	spy.mu.Lock()
	defer spy.mu.Unlock()
	if spy.perKeys == 0 || spy.perKeys != len(spy.runs) {
		t.Fatalf("%d of %d batches on the per-key path, want all", spy.perKeys, len(spy.runs))
	}
}

// TestMixedShapeBatchRuns: a batch of mixed shapes and modes splits into
// several runs; party 1 derives the same split (it refuses a batch whose
// runs differ from its own, which would end the session and leave
// requests unanswered) and every pair verifies (TestPackedAndPlainReplies
// checks the same mix through the client).
func TestMixedShapeBatchRuns(t *testing.T) {
	s, spy := spiedSites(t, Config{Batch: 128, InFlight: 1})
	m := prg.Mask(12)
	ps := []fss.Params{{Type: fss.DPF, InBits: 12, OutBits: 12}, {Type: fss.DCF, InBits: 12, OutBits: 12}}
	var reqs [2][]*pb.KeyRequest
	type truth struct{ alpha, beta uint64 }
	ts := map[uint64]truth{}
	// Blocks of 10: bound (a bulk), consume (per key), derived (a bulk),
	// then bound 3 at a time in turns of shape (per key).
	kind := func(i int) int {
		if i >= 30 {
			return 0
		}
		return []int{0, 3, 2}[i/10]
	}
	shape := func(i int) fss.Params {
		if i >= 30 {
			return ps[(i/3)%2]
		}
		return ps[(i/10)%2]
	}
	for i := range 48 {
		id := uint64(i + 1)
		p := shape(i)
		switch kind(i) {
		case 0, 1:
			tr := truth{rand.Uint64() & m, rand.Uint64()&m | 1}
			a0, b0 := rand.Uint64()&m, rand.Uint64()&m
			reqs[0] = append(reqs[0], client.Bound(id, msg.MAC, p, a0, b0))
			reqs[1] = append(reqs[1], client.Bound(id, msg.MAC, p, (tr.alpha-a0)&m, (tr.beta-b0)&m))
			ts[id] = tr
		case 2:
			for b := range 2 {
				reqs[b] = append(reqs[b], client.Derived(id, p, 2, 0, true))
			}
		case 3:
			tr := truth{rand.Uint64() & m, rand.Uint64()&m | 1}
			a0, b0 := rand.Uint64()&m, rand.Uint64()&m
			pts := []uint64{tr.alpha, (tr.alpha + 1) & m}
			reqs[0] = append(reqs[0], client.Consume(id, msg.MAC, p, a0, b0, pts))
			reqs[1] = append(reqs[1], client.Consume(id, msg.MAC, p, (tr.alpha-a0)&m, (tr.beta-b0)&m, pts))
			ts[id] = tr
		}
	}
	reps := streamBoth(t, s, reqs)
	for i := range reqs[0] {
		r0, r1 := reps[0][i], reps[1][i]
		if r0.Err != nil || r1.Err != nil || r0.ID != r1.ID || len(r0.Shares) != len(r1.Shares) {
			t.Fatalf("reply %d: %+v / %+v", i, r0, r1)
		}
		tr := ts[r0.ID]
		p := shape(i)
		for k := range r0.Shares {
			s0, s1 := r0.Shares[k], r1.Shares[k]
			switch reqs[0][i].Mode {
			case "consume":
				if len(s0.Evals) != 2 || len(s1.Evals) != 2 {
					t.Fatalf("reply %d: evaluations %v / %v", r0.ID, s0.Evals, s1.Evals)
				}
				for j, x := range []uint64{tr.alpha, (tr.alpha + 1) & m} {
					want := uint64(0)
					if p.Type == fss.DPF && x == tr.alpha || p.Type == fss.DCF && x < tr.alpha {
						want = tr.beta
					}
					if got := (s0.Evals[j] + s1.Evals[j]) & m; got != want {
						t.Fatalf("reply %d: evaluation at %d: %d, want %d", r0.ID, x, got, want)
					}
				}
			case "derived":
				checkPair(t, s0.Key, s1.Key, (s0.AlphaShare+s1.AlphaShare)&m, (s0.BetaShare+s1.BetaShare)&m)
			default:
				checkPair(t, s0.Key, s1.Key, tr.alpha, tr.beta)
			}
		}
	}
	spy.mu.Lock()
	defer spy.mu.Unlock()
	multi := 0
	for _, r := range spy.runs {
		if len(r) > 1 {
			multi++
		}
	}
	if multi == 0 {
		t.Fatalf("no batch split into several runs: %v", spy.runs)
	}
	t.Logf("runs of the batches: %v", spy.runs)
}

// TestBoundBulkRequest: over the daemons' gRPC API, a bound request of
// count keys (alpha_shares, beta_shares) is answered as one reply of
// count key shares, in order, which pair into their point functions on
// each tier; a malformed one (count and shares that differ, shares with
// the single-key fields, count over MaxCount) is refused bad_request.
func TestBoundBulkRequest(t *testing.T) {
	s := pairOfSites(t, Config{Batch: 64})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := fss.Params{Type: fss.DCF, InBits: 16, OutBits: 16}
	const n = 50
	var streams [2]*client.Stream
	for b := range 2 {
		st, err := s[b].app.Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		streams[b] = st
	}
	var alpha, beta [3][]uint64
	var bulks [2][]*pb.KeyRequest
	for i, tier := range []msg.Tier{msg.Keystream, msg.MAC, msg.BatchMAC} {
		var sh [2][2][]uint64
		for b := range 2 {
			sh[b] = [2][]uint64{make([]uint64, n), make([]uint64, n)}
		}
		alpha[i], beta[i] = make([]uint64, n), make([]uint64, n)
		for k := range n {
			alpha[i][k], beta[i][k] = rand.Uint64()&0xffff, rand.Uint64()&0xffff|1
			a0, b0 := rand.Uint64()&0xffff, rand.Uint64()&0xffff
			sh[0][0][k], sh[0][1][k] = a0, b0
			sh[1][0][k], sh[1][1][k] = (alpha[i][k]-a0)&0xffff, (beta[i][k]-b0)&0xffff
		}
		for b := range 2 {
			bulks[b] = append(bulks[b], client.BoundBulk(uint64(1+i), tier, p, sh[b][0], sh[b][1]))
		}
	}
	for b := range 2 {
		// As one message (SendBatch: a bound bulk is never packed,
		// which would drop its shares).
		if err := streams[b].SendBatch(bulks[b]); err != nil {
			t.Fatal(err)
		}
	}
	bad := []*pb.KeyRequest{
		client.BoundBulk(10, msg.MAC, p, make([]uint64, 3), make([]uint64, 2)),
		{Id: 11, Mode: "bound", Type: "dcf", InBits: 16, OutBits: 16, Count: 4, AlphaShares: make([]uint64, 3), BetaShares: make([]uint64, 3)},
		{Id: 12, Mode: "bound", Type: "dcf", InBits: 16, OutBits: 16, Count: 2, AlphaShare: 1, AlphaShares: make([]uint64, 2), BetaShares: make([]uint64, 2)},
		client.BoundBulk(13, msg.MAC, p, make([]uint64, MaxCount+1), make([]uint64, MaxCount+1)),
		{Id: 14, Mode: "derived", Type: "dcf", InBits: 16, OutBits: 16, Count: 2, AlphaShares: make([]uint64, 2)},
	}
	for b := range 2 {
		for _, r := range bad {
			if err := streams[b].Send(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	reps := recvBoth(t, streams, 3+len(bad))
	for b := range 2 {
		for _, r := range reps[b] {
			switch {
			case r.ID <= 3 && (r.Err != nil || len(r.Shares) != n):
				t.Fatalf("party %d: bulk %d: %v, %d shares", b, r.ID, r.Err, len(r.Shares))
			case r.ID > 3:
				var re *client.ReplyError
				if !errors.As(r.Err, &re) || re.Class != ErrClassBadRequest {
					t.Fatalf("party %d: malformed bulk %d answered %v", b, r.ID, r.Err)
				}
			}
		}
	}
	byID := func(rs []*client.Reply, id uint64) *client.Reply {
		for _, r := range rs {
			if r.ID == id {
				return r
			}
		}
		t.Fatalf("no reply %d", id)
		return nil
	}
	for i := range 3 {
		r0, r1 := byID(reps[0], uint64(1+i)), byID(reps[1], uint64(1+i))
		for k := range n {
			a := alpha[i][k]
			if r0.Shares[k].Counter != r1.Shares[k].Counter {
				t.Fatalf("bulk %d key %d: counters differ", i+1, k)
			}
			if err := fss.CheckPair(r0.Shares[k].Key, r1.Shares[k].Key, a, beta[i][k], (a-1)&0xffff, a, (a+1)&0xffff); err != nil {
				t.Fatalf("bulk %d key %d: %v", i+1, k, err)
			}
		}
	}
}
