package service

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// countingModule records what a party submits to its module: how often
// each bound share (α share, β share) was submitted, and the abandons.
type countingModule struct {
	socket.Module
	mu         sync.Mutex
	subs       map[[2]uint64]int
	mismatches int // abandons with Mismatch set
}

func newCounting(m socket.Module) *countingModule {
	return &countingModule{Module: m, subs: map[[2]uint64]int{}}
}

func (c *countingModule) note(r *msg.SubmitRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch r.Kind {
	case msg.SubmitShares:
		for _, s := range r.Shares {
			if s.Mode != msg.Derived {
				c.subs[[2]uint64{s.AlphaShare, s.BetaShare}]++
			}
		}
	case msg.SubmitBulk:
		if b := r.Bulk; b != nil && b.Mode != msg.Derived {
			for i := range b.AlphaShares {
				c.subs[[2]uint64{b.AlphaShares[i], b.BetaShares[i]}]++
			}
		}
	case msg.SubmitAbandon:
		if r.Mismatch {
			c.mismatches++
		}
	}
}

func (c *countingModule) Do(ctx context.Context, calls []socket.Call, stop bool) ([]socket.Result, error) {
	for _, call := range calls {
		if call.Submit != nil {
			c.note(call.Submit)
		}
	}
	return c.Module.Do(ctx, calls, stop)
}

func (c *countingModule) Submit(ctx context.Context, r *msg.SubmitRequest) (*msg.SubmitResponse, error) {
	c.note(r)
	return c.Module.Submit(ctx, r)
}

// submittedOnce fails t unless each site's module got the shares of its
// request i (id) exactly once.
func submittedOnce(t *testing.T, cm [2]*countingModule, reqs [2][]*pb.KeyRequest, i int, id uint64) {
	t.Helper()
	for b := 0; b < 2; b++ {
		if k := cm[b].times(reqs[b][i].AlphaShare, reqs[b][i].BetaShare); k != 1 {
			t.Fatalf("request %d: module %d got its shares %d times, want once", id, b, k)
		}
	}
}

// times is how often the module got the share pair (a, b).
func (c *countingModule) times(a, b uint64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.subs[[2]uint64{a, b}]
}

func (c *countingModule) maxTimes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := 0
	for _, n := range c.subs {
		m = max(m, n)
	}
	return m
}

func (c *countingModule) mismatchAbandons() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mismatches
}

// countedSites is faultySitesWith with counting modules (config: Batch 8,
// InFlight inFlight).
func countedSites(t *testing.T, inFlight int, wrap func(grpc.ServerStream) grpc.ServerStream) ([2]*site, [2]*countingModule) {
	return countedSitesWith(t, func(c *Config) { c.InFlight = inFlight }, wrap)
}

func countedSitesWith(t *testing.T, cfgf func(*Config), wrap func(grpc.ServerStream) grpc.ServerStream) ([2]*site, [2]*countingModule) {
	var cm [2]*countingModule
	s := faultySitesWith(t, cfgf, wrap, func(b int, m socket.Module) socket.Module {
		cm[b] = newCounting(m)
		return cm[b]
	})
	return s, cm
}

// batchIDs returns the ids of a batch, in order.
func batchIDs(b *pb.Batch) []uint64 {
	if b.PackedItems != nil {
		return b.PackedItems.Ids
	}
	ids := make([]uint64, len(b.Items))
	for i, it := range b.Items {
		ids[i] = it.Id
	}
	return ids
}

// idStream records the ids of the first keystream batch party 0 sends and
// flips one bit of the α field of its first frame.
type idStream struct {
	grpc.ServerStream
	mu  *sync.Mutex
	ids *[]uint64
}

func (s *idStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	b := m.(*pb.PeerMsg).GetBatch()
	s.mu.Lock()
	defer s.mu.Unlock()
	if b != nil && msg.Tier(b.Tier) == msg.Keystream && len(b.FrameData) > 0 && *s.ids == nil {
		*s.ids = batchIDs(b)
		b.FrameData[0] ^= 1
	}
	return nil
}

// replyClass returns the error class of a reply (fails t if it is an error
// other than a ReplyError), or "" for keys.
func replyClass(t testing.TB, r *client.Reply) string {
	t.Helper()
	if r.Err == nil {
		return ""
	}
	var re *client.ReplyError
	if !errors.As(r.Err, &re) {
		t.Fatalf("request %d: %v", r.ID, r.Err)
	}
	return re.Class
}

// TestTamperedKeystreamBatchSpent: a keystream frame altered on the peer
// link makes the two modules' keys not pair. The batch's requests fail
// tampered at both sites and their shares are never submitted again (each
// module saw each share once); both parties abandon the batch with
// Mismatch set and count it; every other request is delivered with a
// pair that verifies. Both reply forms: party 1's frames early (digest
// after), and in one part.
func TestTamperedKeystreamBatchSpent(t *testing.T) {
	t.Run("early", func(t *testing.T) { testTamperedKeystreamBatchSpent(t, false) })
	t.Run("one-shot", func(t *testing.T) { testTamperedKeystreamBatchSpent(t, true) })
}

func testTamperedKeystreamBatchSpent(t *testing.T, oneShot bool) {
	var mu sync.Mutex
	var tampered []uint64
	s, cm := countedSitesWith(t, func(c *Config) { c.InFlight, c.oneShotReplies = 1, oneShot }, func(ss grpc.ServerStream) grpc.ServerStream {
		return &idStream{ServerStream: ss, mu: &mu, ids: &tampered}
	})
	p := fss.Params{Type: fss.DPF, InBits: 32, OutBits: 32}
	const n = 48
	ws, reqs := boundRequests(p, 1, n/2, "otp")
	ws2, reqs2 := boundRequests(p, n/2+1, n/2, "batchmac")
	ws = append(ws, ws2...)
	for b := 0; b < 2; b++ {
		reqs[b] = append(reqs[b], reqs2[b]...)
	}
	reps := streamBoth(t, s, reqs)

	mu.Lock()
	bad := map[uint64]bool{}
	for _, id := range tampered {
		bad[id] = true
	}
	mu.Unlock()
	if len(bad) == 0 {
		t.Fatal("no keystream batch was altered")
	}
	for i := range n {
		r0, r1 := reps[0][i], reps[1][i]
		c0, c1 := replyClass(t, r0), replyClass(t, r1)
		if bad[r0.ID] {
			if c0 != ErrClassTampered || c1 != ErrClassTampered {
				t.Fatalf("request %d of the altered batch: %q / %q, want tampered at both sites", r0.ID, c0, c1)
			}
			if pb.AlphaReusable(c0) {
				t.Fatal("tampered must not let α be used again")
			}
			submittedOnce(t, cm, reqs, i, r0.ID)
			continue
		}
		if c0 != "" || c1 != "" {
			t.Fatalf("request %d outside the altered batch: %q / %q", r0.ID, c0, c1)
		}
		checkPair(t, r0.Shares[0].Key, r1.Shares[0].Key, ws[i].alpha, ws[i].beta)
	}
	for b := 0; b < 2; b++ {
		if got := cm[b].mismatchAbandons(); got < 1 {
			t.Fatalf("module %d: %d abandons with Mismatch, want ≥ 1", b, got)
		}
		if got := s[b].party.pairMismatches.Load(); got < 1 {
			t.Fatalf("party %d counted %d pair mismatches, want ≥ 1", b, got)
		}
		poll, err := cm[b].Poll(context.Background(), &msg.PollRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := poll.Rejects[rejectPairMismatch]; ok && v < 1 {
			t.Fatalf("module %d: Rejects[pair_mismatch] = %d", b, v)
		} else if !ok {
			t.Logf("module %d does not report pair_mismatch (module side not merged yet)", b)
		}
	}
}

// cutStream fails party 1's send of the digest of the first batch whose
// frames it sent early: both modules have opened the other's frames, and
// the session is lost before anything is delivered.
type cutStream struct {
	grpc.ServerStream
	mu  *sync.Mutex
	cut *uint64 // seq of the cut batch (0: none yet)
	ids map[uint64][]uint64
}

func (s *cutStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if b := m.(*pb.PeerMsg).GetBatch(); b != nil {
		s.mu.Lock()
		s.ids[b.Seq] = append([]uint64(nil), batchIDs(b)...)
		s.mu.Unlock()
	}
	return nil
}

func (s *cutStream) SendMsg(m any) error {
	br := m.(*pb.PeerMsg).GetBatchReply()
	if br != nil && !br.DigestFollows && len(br.Digest) > 0 {
		s.mu.Lock()
		first := *s.cut == 0
		if first {
			*s.cut = br.Seq
		}
		s.mu.Unlock()
		if first {
			return errors.New("test: link cut")
		}
	}
	return s.ServerStream.SendMsg(m)
}

// TestSessionLostAfterFramesOpened: the link is cut after both modules
// opened a batch's frames (the default tier, batchmac) and before party 0
// saw party 1's digest. That batch's requests fail spent at both sites and
// are never submitted again; the requests queued behind it are delivered
// after the reconnect. In one-shot replies the cut loses party 1's whole
// reply: only party 1's module opened frames, and it tells party 0 at the
// next session start, so both sites still fail the batch spent.
func TestSessionLostAfterFramesOpened(t *testing.T) {
	t.Run("early", func(t *testing.T) { testSessionLostAfterFramesOpened(t, false) })
	t.Run("one-shot", func(t *testing.T) { testSessionLostAfterFramesOpened(t, true) })
}

func testSessionLostAfterFramesOpened(t *testing.T, oneShot bool) {
	var mu sync.Mutex
	var cut uint64
	ids := map[uint64][]uint64{}
	s, cm := countedSitesWith(t, func(c *Config) { c.InFlight, c.oneShotReplies = 1, oneShot }, func(ss grpc.ServerStream) grpc.ServerStream {
		return &cutStream{ServerStream: ss, mu: &mu, cut: &cut, ids: ids}
	})
	p := fss.Params{Type: fss.DCF, InBits: 32, OutBits: 32}
	const n = 40
	ws, reqs := boundRequests(p, 1, n, "") // empty tier: the default
	reps := streamBoth(t, s, reqs)
	mu.Lock()
	lost := map[uint64]bool{}
	for _, id := range ids[cut] {
		lost[id] = true
	}
	mu.Unlock()
	if cut == 0 || len(lost) == 0 {
		t.Fatal("the link was never cut")
	}
	for i := range n {
		r0, r1 := reps[0][i], reps[1][i]
		c0, c1 := replyClass(t, r0), replyClass(t, r1)
		if lost[r0.ID] {
			if c0 != ErrClassSpent || c1 != ErrClassSpent {
				t.Fatalf("request %d of the cut batch: %q / %q, want spent at both sites", r0.ID, c0, c1)
			}
			submittedOnce(t, cm, reqs, i, r0.ID)
			continue
		}
		if c0 != "" || c1 != "" {
			t.Fatalf("request %d behind the cut batch: %q / %q, want keys", r0.ID, c0, c1)
		}
		checkPair(t, r0.Shares[0].Key, r1.Shares[0].Key, ws[i].alpha, ws[i].beta)
	}
}

// oracleStream is an attacker on the peer link running the α-recovery
// attack of issue 18: in every keystream batch it flips bit k of the α
// field of both parties' frames of a request, where k is how many times it
// has probed that request before, and reads the outcome from whether the
// request is delivered. On batchmac batches it flips a byte of both
// frames, for the first batchmacTampers batches.
type oracleStream struct {
	grpc.ServerStream
	a *attacker
}

type attacker struct {
	mu       sync.Mutex
	probes   map[uint64]int      // id → keystream batches it was probed in
	flips    map[uint64][]int    // seq → bit flipped in each frame (keystream)
	macLeft  int                 // batchmac batches still to tamper
	macSeqs  map[uint64]bool     // batchmac batches tampered
	tampered atomic.Int32        // frames altered
	batchIDs map[uint64][]uint64 // seq → ids
	// opened: batches a module opened the other site's frames of, as the
	// link shows it — party 1 answered with a digest or a tampered/spent
	// refusal, or party 0 confirmed. Only those give the attacker an
	// outcome; a batch whose frames no module opened tells it nothing, and
	// its shares may be sealed again under a fresh counter (a fresh
	// keystream position).
	opened    map[uint64]bool
	inBits    int
	keystream int // keystream batches seen
}

func (s *oracleStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	a := s.a
	if c := m.(*pb.PeerMsg).GetConfirm(); c != nil {
		a.mu.Lock()
		a.opened[c.Seq] = true
		a.mu.Unlock()
	}
	b := m.(*pb.PeerMsg).GetBatch()
	if b == nil || len(b.FrameData) == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := batchIDs(b)
	a.batchIDs[b.Seq] = append([]uint64(nil), ids...)
	switch msg.Tier(b.Tier) {
	case msg.Keystream:
		recs := keystreamRecords(b.FrameData, b.FrameLens, len(ids))
		if recs == nil {
			return nil // one frame per bound request
		}
		a.keystream++
		bits := make([]int, len(ids))
		for k, id := range ids {
			bits[k] = a.probes[id] % a.inBits
			a.probes[id]++
			flipAlphaBit(recs[k], bits[k])
		}
		a.flips[b.Seq] = bits
		a.tampered.Add(int32(len(ids)))
	case msg.BatchMAC:
		if a.macLeft > 0 {
			a.macLeft--
			a.macSeqs[b.Seq] = true
			b.FrameData[len(b.FrameData)/2] ^= 0x20
			a.tampered.Add(1)
		}
	}
	return nil
}

func (s *oracleStream) SendMsg(m any) error {
	br := m.(*pb.PeerMsg).GetBatchReply()
	if br != nil && (len(br.Digest) > 0 || br.ErrorClass == ErrClassTampered || br.ErrorClass == ErrClassSpent) {
		s.a.mu.Lock()
		s.a.opened[br.Seq] = true
		s.a.mu.Unlock()
	}
	if br != nil && len(br.FrameData) > 0 {
		a := s.a
		a.mu.Lock()
		if bits, ok := a.flips[br.Seq]; ok {
			if recs := keystreamRecords(br.FrameData, br.FrameLens, len(bits)); recs != nil {
				for k := range bits {
					flipAlphaBit(recs[k], bits[k])
				}
			}
		}
		if a.macSeqs[br.Seq] {
			br.FrameData[len(br.FrameData)/2] ^= 0x20
		}
		a.mu.Unlock()
	}
	return s.ServerStream.SendMsg(m)
}

// keystreamRecords splits keystream-tier frame bytes into the per-key
// frames of n requests: one frame each (the per-key path), or one frame
// of a bulk, which is the per-key frames concatenated (n records of one
// size). nil when they are neither.
func keystreamRecords(data []byte, lens []uint32, n int) [][]byte {
	out := make([][]byte, 0, n)
	switch {
	case len(lens) == n:
		off := 0
		for _, l := range lens {
			out = append(out, data[off:off+int(l)])
			off += int(l)
		}
	case len(lens) == 1 && n > 0 && len(data)%n == 0:
		r := len(data) / n
		for k := range n {
			out = append(out, data[k*r:(k+1)*r])
		}
	default:
		return nil
	}
	return out
}

// flipAlphaBit flips bit i of a keystream frame's α field (the frame is
// the α share then the β share, little-endian, XORed with the keystream).
func flipAlphaBit(f []byte, i int) { f[i/8] ^= 1 << (i % 8) }

// outcomes returns how many batches containing id had their frames opened
// by a module: the outcomes the attacker learned about id's α.
func (a *attacker) outcomes(id uint64) int {
	n := 0
	for seq, ids := range a.batchIDs {
		if a.opened[seq] && slices.Contains(ids, id) {
			n++
		}
	}
	return n
}

// TestAlphaOracleAttack is the regression test of the α-recovery attack
// through the party daemons. On the opt-in keystream tier the attacker
// gets at most one outcome per α: every request it probed was in at most
// one batch whose frames a module opened (a batch lost before any module
// opened its frames tells nothing, and its requests are batched again
// under fresh counters: their shares may reach a module twice, sealed
// under fresh keystream positions), and every request
// ends alike at both sites (keys, or a class that forbids reusing α). On
// the default tier, batchmac, the altered frames are refused by
// authentication, nothing is spent, the requests are batched again and
// delivered with keys that pair for the requested α and β.
func TestAlphaOracleAttack(t *testing.T) {
	p := fss.Params{Type: fss.DPF, InBits: 32, OutBits: 32}
	t.Run("otp", func(t *testing.T) {
		a := &attacker{probes: map[uint64]int{}, flips: map[uint64][]int{}, macSeqs: map[uint64]bool{},
			batchIDs: map[uint64][]uint64{}, opened: map[uint64]bool{}, inBits: p.InBits}
		s, _ := countedSites(t, 4, func(ss grpc.ServerStream) grpc.ServerStream { return &oracleStream{ServerStream: ss, a: a} })
		const n = 64
		_, reqs := boundRequests(p, 1, n, "otp")
		reps := streamBoth(t, s, reqs)
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.keystream == 0 || a.tampered.Load() == 0 {
			t.Fatal("the attacker saw no keystream batch")
		}
		outcomes := 0
		for i := range n {
			r0, r1 := reps[0][i], reps[1][i]
			if k := a.outcomes(r0.ID); k > 1 {
				t.Fatalf("request %d was probed in %d batches whose frames a module opened: the attacker learned %d outcomes on one α", r0.ID, k, k)
			}
			c0, c1 := replyClass(t, r0), replyClass(t, r1)
			switch {
			case c0 == "" && c1 == "":
				outcomes++ // delivered: bit k of the shares agreed (the keys are for a shifted α)
			case c0 == "" || c1 == "":
				t.Fatalf("request %d: answered at one site only (%q / %q)", r0.ID, c0, c1)
			default:
				if pb.AlphaReusable(c0) || pb.AlphaReusable(c1) {
					t.Fatalf("request %d: %q / %q after its frames were altered: α must be spent", r0.ID, c0, c1)
				}
				outcomes++
			}
		}
		t.Logf("%d keystream batches altered, %d requests answered, each probed at most once", a.keystream, outcomes)
	})
	t.Run("batchmac", func(t *testing.T) {
		a := &attacker{probes: map[uint64]int{}, flips: map[uint64][]int{}, macSeqs: map[uint64]bool{},
			batchIDs: map[uint64][]uint64{}, opened: map[uint64]bool{}, inBits: p.InBits, macLeft: 3}
		s, cm := countedSites(t, 4, func(ss grpc.ServerStream) grpc.ServerStream { return &oracleStream{ServerStream: ss, a: a} })
		const n = 64
		ws, reqs := boundRequests(p, 1, n, "") // the default tier
		reps := streamBoth(t, s, reqs)
		if a.tampered.Load() == 0 {
			t.Fatal("the attacker altered no batchmac frame")
		}
		for i := range n {
			r0, r1 := reps[0][i], reps[1][i]
			if r0.Err != nil || r1.Err != nil {
				t.Fatalf("request %d: %v / %v: an altered batchmac frame must be refused and the request batched again", r0.ID, r0.Err, r1.Err)
			}
			checkPair(t, r0.Shares[0].Key, r1.Shares[0].Key, ws[i].alpha, ws[i].beta)
		}
		if cm[0].maxTimes() < 2 {
			t.Fatal("no request was batched again after its frame was refused")
		}
		t.Logf("%d batchmac frames altered; every request delivered with a good pair", a.tampered.Load())
	})
}
