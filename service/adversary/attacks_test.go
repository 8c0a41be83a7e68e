package adversary

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// knownOpen: the two HIGH attacks of issue 32 are open on this code
// (forged recovery records, issue 33; correlations and confirmations on
// the peer's word, issue 32 item 2). While true, their fixed cases below
// skip with the attack's description when they find violations (as they
// should until the fixes land), and the random campaign leaves out the
// mutation classes that act through them (gate in mutate_test.go,
// composeGate in composite_test.go). Set it to false once branches
// recovery and corrbind are merged.
const knownOpen = false

const (
	recoveryAttack = "forged recovery records: the honest site re-delivers, for any id, the outputs at counters the peer's record names (HelloReply.recent / Witness.recent accepted at any handshake)"
	confirmAttack  = "delivery on the peer's word: party 1 delivers a held batch on Confirm{ok} (or a hello's delivered_through) although the pair tags disagreed"
)

// craftRecord writes the recovery record a host can make for id, a
// request the honest site delivered: its batch item as the proxy saw it,
// its counter, and the digest of the pair tag the host's own module
// holds for that counter (the same at both modules).
func craftRecord(w *world, o *oracle, id uint64) (*pb.RecentItem, error) {
	var c uint64
	found := false
	o.mu.Lock()
	for k, d := range o.delivered {
		if d == id {
			c, found = k, true
		}
	}
	o.mu.Unlock()
	part, ok := w.adv.out(c)
	if !found || !ok {
		return nil, fmt.Errorf("no delivered output of request %d to forge a record of", id)
	}
	h := sha256.New()
	h.Write([]byte("kord/v1/recover"))
	h.Write(part.tag[:])
	it, err := batchItem(w.px, id)
	if err != nil {
		return nil, err
	}
	return &pb.RecentItem{Item: it, FirstCounter: c, Digest: h.Sum(nil)}, nil
}

// batchItem returns the batch item of id from the batches party 0 sent.
func batchItem(x *proxy, id uint64) (*pb.BatchItem, error) {
	for _, m := range x.messages(func(m seenMsg) bool { return m.dir == from0 && m.m.GetBatch() != nil }) {
		b := m.m.GetBatch()
		for _, it := range b.Items {
			if it.GetId() == id {
				return proto.Clone(it).(*pb.BatchItem), nil
			}
		}
		pk := b.GetPackedItems()
		for i, v := range pk.GetIds() {
			if v != id || len(pk.Shapes) < 4*(i+1) {
				continue
			}
			sh := pk.Shapes[4*i:]
			it := &pb.BatchItem{Id: id, Mode: uint32(sh[0]), Type: uint32(sh[1]), InBits: uint32(sh[2]), OutBits: uint32(sh[3])}
			if i < len(pk.Counts) {
				it.Count = pk.Counts[i]
			}
			if i < len(pk.Betas) {
				it.Beta = pk.Betas[i]
			}
			if i < len(pk.DeriveBeta) {
				it.DeriveBeta = pk.DeriveBeta[i] == 1
			}
			return it, nil
		}
	}
	return nil, fmt.Errorf("request %d was in no batch", id)
}

// finish ends a fixed case of an attack: while knownOpen its findings
// (the oracle counted them apart) skip the test with the attack's
// description; once the fix has landed they fail it (the oracle already
// reported each as an error).
func finish(t *testing.T, o *oracle, attack string) {
	t.Helper()
	f := o.findings()
	switch {
	case len(f) > 0 && knownOpen:
		t.Skipf("known open: %s — %d violations, e.g. %s", attack, len(f), f[0])
	case len(f) == 0 && knownOpen:
		t.Logf("no violation found although knownOpen says %q is open: if its fix has landed, set knownOpen to false", attack)
	}
}

// deliver has both sites ask for a request until the honest site has
// delivered one (a loaded machine may let one site's request arrive after
// the match timeout), and returns it.
func deliver(t *testing.T, o *oracle, mk func(id uint64) *req) *req {
	t.Helper()
	for id := uint64(100); id < 105; id++ {
		q := mk(id)
		o.ask([]*req{q})
		o.mu.Lock()
		n := 0
		for _, d := range o.delivered {
			if d == id {
				n++
			}
		}
		o.mu.Unlock()
		if n > 0 {
			return q
		}
	}
	t.Fatal("the honest site delivered none of 5 requests")
	return nil
}

// waitFor waits until cond holds, failing t after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// synced reports whether a session after n has completed its handshake.
func synced(x *proxy, n int) func() bool {
	return func() bool {
		return len(x.messages(func(m seenMsg) bool { return m.sess > n && m.m.GetSyncDone() != nil })) > 0
	}
}

// TestForgedRecoveryRecords: the peer names, in the recovery records of
// a handshake (HelloReply.recent to party 0, Witness.recent to party 1),
// the counters of a pair already delivered at the honest site, under
// another id (never seen, or queued at the honest site) or under the
// same id asked again with a fresh α, before or after a restart of the
// honest party. The honest site must never deliver those outputs again.
// The records are the peer's own genuine ones (the adversary's real party
// lists them), rewritten: a host can always compute their digest, since
// a key's pair tag is the same at both modules.
func TestForgedRecoveryRecords(t *testing.T) {
	cases := []struct {
		name    string
		honest  int
		restart bool
		target  string // new: an id never seen; queued: one waiting at the honest site; answered: the id itself, asked again
		stale   bool   // the records are replayed at a later handshake than the one they came in
		crafted bool   // the host writes the record itself rather than rewrite its party's
	}{
		{"party0/new-id", 0, false, "new", false, false},
		{"party0/new-id/crafted", 0, false, "new", false, true},
		{"party0/queued-id", 0, false, "queued", false, false},
		{"party0/answered-id", 0, false, "answered", false, false},
		{"party0/answered-id/stale", 0, false, "answered", true, false},
		{"party0/after-restart/new-id", 0, true, "new", false, false},
		{"party1/after-restart/new-id", 1, true, "new", false, false},
		{"party1/after-restart/new-id/crafted", 1, true, "new", false, true},
		{"party1/after-restart/answered-id", 1, true, "answered", false, false},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(i), 33))
			o := newOracle(t, knownOpen)
			w := newWorld(t, c.honest, o)
			p := fss.Params{Type: fss.DPF, InBits: 12, OutBits: 12}
			y := deliver(t, o, func(id uint64) *req { return boundReq(r, id, p) })
			target := uint64(200)
			if c.target == "answered" {
				target = y.id
			}
			// The records travel party 1 → party 0 in the hello reply and
			// party 0 → party 1 in the witness.
			recDir, recType := from1, "hello_reply"
			if c.honest == 1 {
				recDir, recType = from0, "witness"
			}
			var mu sync.Mutex
			var kept []*pb.RecentItem
			forged, forgedIn, keptIn := 0, 0, 0
			w.px.setHook(func(s *session, dir int, m *pb.PeerMsg) ([]*pb.PeerMsg, bool) {
				mu.Lock()
				defer mu.Unlock()
				if c.honest == 0 && !c.restart && !c.crafted && dir == from0 && m.GetHello() != nil && forged == 0 && kept == nil {
					m.GetHello().Run ^= 0x5a5a // party 1 takes party 0 for restarted and lists its records
				}
				if dir != recDir || msgType(m) != recType || forged > 0 {
					return []*pb.PeerMsg{m}, false
				}
				var recs *[]*pb.RecentItem
				if c.honest == 0 {
					recs = &m.GetHelloReply().Recent
				} else {
					recs = &m.GetWitness().Recent
				}
				var mine []*pb.RecentItem
				for _, it := range *recs {
					if it.GetItem().GetId() == y.id && !c.crafted {
						mine = append(mine, it)
					}
				}
				if len(mine) == 0 && kept == nil {
					// No genuine record of y here: the host writes one
					// (its own module's pair tag gives the digest).
					rec, err := craftRecord(w, o, y.id)
					if err != nil {
						t.Error(err)
						return []*pb.PeerMsg{m}, false
					}
					mine = []*pb.RecentItem{rec}
					*recs = append(*recs, mine...)
				}
				if c.stale && kept == nil {
					kept, keptIn = mine, s.n // kept for a later handshake
					*recs = slices.DeleteFunc(*recs, func(it *pb.RecentItem) bool { return slices.Contains(mine, it) })
					return []*pb.PeerMsg{m}, false
				}
				if c.stale {
					if s.n <= keptIn {
						return []*pb.PeerMsg{m}, false
					}
					mine = kept
					*recs = append(*recs, kept...)
				}
				for _, it := range mine {
					it.Item.Id, it.Held = target, false
				}
				forged, forgedIn = len(mine), s.n
				return []*pb.PeerMsg{m}, false
			})
			x := boundReq(r, target, p) // a fresh α, the shape of y
			var queued sync.WaitGroup
			if c.target == "queued" {
				queued.Add(1)
				go func() { defer queued.Done(); o.askHonest([]*req{x}) }()
				time.Sleep(20 * time.Millisecond)
			}
			switch {
			case c.restart:
				w.restart(c.honest)
			default:
				w.px.cut()
			}
			if c.stale {
				waitFor(t, endBound, "the records", func() bool { mu.Lock(); defer mu.Unlock(); return kept != nil })
				w.px.cut()
			}
			waitFor(t, endBound, "a forged record", func() bool { mu.Lock(); defer mu.Unlock(); return forged > 0 })
			mu.Lock()
			in := forgedIn
			mu.Unlock()
			waitFor(t, endBound, "the forged handshake", synced(w.px, in-1))
			if c.target == "queued" {
				queued.Wait()
			} else {
				o.askHonest([]*req{x})
			}
			total.steps.Add(1)
			total.mutated.Add(int64(forged))
			finish(t, o, recoveryAttack)
		})
	}
}

// TestRecoveryRecordsIgnoredWithoutRestart is the control of the cases
// above: a party 1 that has had a session since it started ignores
// Witness.recent, so the forged record must find nothing on this code.
func TestRecoveryRecordsIgnoredWithoutRestart(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 33))
	o := newOracle(t, false)
	w := newWorld(t, 1, o)
	p := fss.Params{Type: fss.DCF, InBits: 10, OutBits: 10}
	y := deliver(t, o, func(id uint64) *req { return boundReq(r, id, p) })
	x := boundReq(r, 200, p)
	rec, err := craftRecord(w, o, y.id)
	if err != nil {
		t.Fatal(err)
	}
	rec.Item.Id = x.id
	forgedIn := 0
	var mu sync.Mutex
	w.px.setHook(func(s *session, dir int, m *pb.PeerMsg) ([]*pb.PeerMsg, bool) {
		if wm := m.GetWitness(); wm != nil {
			mu.Lock()
			forgedIn = s.n
			mu.Unlock()
			wm.Recent = append(wm.Recent, rec)
		}
		return []*pb.PeerMsg{m}, false
	})
	w.px.cut()
	waitFor(t, endBound, "a forged record", func() bool { mu.Lock(); defer mu.Unlock(); return forgedIn > 0 })
	mu.Lock()
	in := forgedIn
	mu.Unlock()
	waitFor(t, endBound, "the handshake", synced(w.px, in-1))
	o.askHonest([]*req{x})
	total.steps.Add(1)
	total.mutated.Add(1)
}

// TestConfirmDespiteMismatchedTags: party 0's host has its module draw
// other shapes at the counters of party 1's request (another correlation
// of as many counters, or derived keys of another width), and confirms
// the batch although the pair tags disagreed (party 0's own party
// refused it). Party 1 must deliver nothing whose pair is not its
// request's.
func TestConfirmDespiteMismatchedTags(t *testing.T) {
	s := msg.Correlation{Kind: msg.CorrMatVec, Ring: 16, In: 4, Out: 2}
	dp := fss.Params{Type: fss.DCF, InBits: 12, OutBits: 12}
	for _, c := range []struct {
		name string
		reqs func(r *rand.Rand, id uint64) *req
		draw func(*msg.SubmitRequest) bool // rewrites the module call; false: not this one
	}{
		{"correlation", func(_ *rand.Rand, id uint64) *req { return corrReq(id, s) }, redrawCorr},
		{"derived", func(r *rand.Rand, id uint64) *req { return derivedReq(r, id, dp) }, redrawDerived},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(11, 32))
			o := newOracle(t, knownOpen)
			w := newWorld(t, 1, o)
			var mu sync.Mutex
			drawn, confirmed := 0, 0
			w.adv.setRewrite(func(calls []socket.Call) []socket.Call {
				out := append([]socket.Call(nil), calls...)
				for i := range out {
					if out[i].Submit == nil {
						continue
					}
					sr := *out[i].Submit
					if c.draw(&sr) {
						out[i].Submit = &sr
						mu.Lock()
						drawn++
						mu.Unlock()
					}
				}
				return out
			})
			w.px.setHook(func(_ *session, dir int, m *pb.PeerMsg) ([]*pb.PeerMsg, bool) {
				if cf := m.GetConfirm(); cf != nil && !cf.Ok {
					cf.Ok, cf.ErrorClass = true, ""
					mu.Lock()
					confirmed++
					mu.Unlock()
				}
				return []*pb.PeerMsg{m}, false
			})
			for k := range 3 {
				o.ask([]*req{c.reqs(r, uint64(10+k))})
			}
			mu.Lock()
			total.steps.Add(3)
			total.mutated.Add(int64(drawn + confirmed))
			t.Logf("%d module calls redrawn at other shapes, %d refusing confirmations turned into ok", drawn, confirmed)
			mu.Unlock()
			finish(t, o, confirmAttack)
		})
	}
}

// TestWithheldHandshake: the adversary withholds, every time, one
// message the honest party waits for: a handshake message, or (party 1
// honest) the confirmation of each held batch. The honest party must
// not stall: its read ends after PeerTimeout, the session ends and is
// retried, a held batch is settled by the next handshake, and requests
// no session can serve fail on their own (party 1: unmatched after
// MatchTimeout; party 0: unavailable after PeerTimeout without a
// session). Check (iv) holds them to 3·PeerTimeout.
func TestWithheldHandshake(t *testing.T) {
	for i, c := range []struct {
		honest int
		typ    string
	}{
		{0, "hello_reply"}, {0, "sync_done"}, {1, "hello"}, {1, "witness"}, {1, "confirm"},
	} {
		t.Run(fmt.Sprintf("party%d/%s", c.honest, c.typ), func(t *testing.T) {
			o := newOracle(t, false)
			o.bound = 3 * peerTimeout
			w := newWorld(t, c.honest, o)
			var mu sync.Mutex
			withheld := 0
			w.px.setHook(func(_ *session, dir int, m *pb.PeerMsg) ([]*pb.PeerMsg, bool) {
				if msgType(m) == c.typ {
					mu.Lock()
					withheld++
					mu.Unlock()
					return nil, false
				}
				return []*pb.PeerMsg{m}, false
			})
			if c.typ != "confirm" {
				w.px.cut()
				waitFor(t, endBound, "a withheld "+c.typ, func() bool { mu.Lock(); defer mu.Unlock(); return withheld > 0 })
			}
			r := rand.New(rand.NewPCG(uint64(i), 4))
			for k := range 2 {
				o.ask([]*req{boundReq(r, uint64(1+k), fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8})})
			}
			mu.Lock()
			n := withheld
			mu.Unlock()
			if n == 0 {
				t.Fatalf("no %s was withheld", c.typ)
			}
			total.steps.Add(2)
			total.mutated.Add(int64(n))
			o.mu.Lock()
			t.Logf("%d %s withheld; refusals by class %v, %d outputs delivered", n, c.typ, o.classes, len(o.delivered))
			o.mu.Unlock()
		})
	}
}
