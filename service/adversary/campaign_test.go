package adversary

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

var (
	campaignSteps = flag.Int("campaign.steps", 16, "steps of the random campaign, per honest party")
	campaignSeed  = flag.Uint64("campaign.seed", 0, "the campaign's seed (0: one from the clock, logged)")
)

// TestMain prints the run's summary line and fails the run on any
// violation.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	line := fmt.Sprintf("adversary: steps=%d mutated=%d checks=%d violations=%d\n",
		total.steps.Load(), total.mutated.Load(), total.checks.Load(), total.violations.Load())
	fmt.Print(line)
	// KORD_ADVERSARY_SUMMARY names a file the line is also appended to:
	// go test ./... shows a passing package's output only with -v, and
	// .ci/run prints the line from there without running the suite twice.
	if path := os.Getenv("KORD_ADVERSARY_SUMMARY"); path != "" {
		if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			f.WriteString(line)
			f.Close()
		}
	}
	if k := total.known.Load(); k > 0 {
		fmt.Printf("adversary: %d findings of attacks still open (knownOpen: see attacks_test.go)\n", k)
	}
	if total.violations.Load() > 0 && code == 0 {
		code = 1
	}
	os.Exit(code)
}

// The kinds of mutation, and the message types they aim at by direction.
var (
	mutations = []string{"drop", "dup", "reorder", "delay", "rewrite", "rewrite", "rewrite", "cut", "replay"}
	msgTypes  = [2][]string{from0: {"hello", "witness", "batch", "batch", "confirm"}, from1: {"hello_reply", "sync_done", "batch_reply", "batch_reply"}}
)

// msgType is the name of m's oneof member.
func msgType(m *pb.PeerMsg) string {
	switch m.M.(type) {
	case *pb.PeerMsg_Hello:
		return "hello"
	case *pb.PeerMsg_HelloReply:
		return "hello_reply"
	case *pb.PeerMsg_Witness:
		return "witness"
	case *pb.PeerMsg_SyncDone:
		return "sync_done"
	case *pb.PeerMsg_Batch:
		return "batch"
	case *pb.PeerMsg_BatchReply:
		return "batch_reply"
	case *pb.PeerMsg_Confirm:
		return "confirm"
	}
	return "?"
}

// mutator is the campaign's hook: it applies one armed mutation to the
// nth message of one type in one direction.
type mutator struct {
	w      *world
	mu     sync.Mutex
	r      *rand.Rand
	kind   string
	dir    int
	typ    string
	nth    int
	armed  bool
	done   string         // what was applied ("" none)
	held   [2]*pb.PeerMsg // reorder: the message held back, per direction
	heldIn [2]int         // the session it was held in (lost with it)
	// composite mutations (composite_test.go)
	record       *pb.RecentItem // a forged record for the next recovery list
	recordIn     int            // the session it went out in
	forgeConfirm bool           // turn refusing confirmations into ok
	forged       int            // confirmations forged
}

func (x *mutator) arm(kind string, dir int, typ string, nth int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.kind, x.dir, x.typ, x.nth, x.armed, x.done = kind, dir, typ, nth, true, ""
}

// disarm ends the step's mutation and returns what was applied.
func (x *mutator) disarm() string {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.armed = false
	return x.done
}

func (x *mutator) hook(s *session, dir int, m *pb.PeerMsg) ([]*pb.PeerMsg, bool) {
	x.mu.Lock()
	x.composite(s, dir, m)
	if h := x.held[dir]; h != nil {
		x.held[dir] = nil
		if x.heldIn[dir] == s.n {
			x.mu.Unlock()
			return []*pb.PeerMsg{m, h}, false // the reorder: m overtakes h
		}
	}
	if !x.armed || dir != x.dir || msgType(m) != x.typ {
		x.mu.Unlock()
		return []*pb.PeerMsg{m}, false
	}
	if x.nth > 0 {
		x.nth--
		x.mu.Unlock()
		return []*pb.PeerMsg{m}, false
	}
	x.armed = false
	kind, r := x.kind, x.r
	desc := fmt.Sprintf("%s %s (session %d)", kind, x.typ, s.n)
	out, cut := []*pb.PeerMsg{m}, false
	switch kind {
	case "drop":
		out = nil
	case "dup":
		out = append(out, proto.Clone(m).(*pb.PeerMsg))
	case "reorder":
		x.held[dir], x.heldIn[dir], out = m, s.n, nil
	case "delay":
		d := time.Duration(20+r.IntN(400)) * time.Millisecond
		desc += fmt.Sprintf(" by %v", d)
		x.mu.Unlock()
		time.Sleep(d)
		x.mu.Lock()
	case "rewrite":
		h := x.w.honest
		p := rewrite(r, m, func(path string) bool { return gate(h, path) == "" })
		if p == "" {
			desc = ""
		} else {
			desc += " " + p
		}
	case "cut":
		if r.IntN(2) == 0 {
			out = nil
		}
		cut = true
	case "replay":
		old := x.w.px.messages(func(o seenMsg) bool { return o.dir == dir && msgType(o.m) == x.typ && !proto.Equal(o.m, m) })
		if len(old) == 0 {
			desc = ""
			break
		}
		o := proto.Clone(old[r.IntN(len(old))].m).(*pb.PeerMsg)
		if gated(x.w.honest, o) {
			desc = ""
			break
		}
		if r.IntN(2) == 0 {
			out = []*pb.PeerMsg{o} // in place of m
		} else {
			out = []*pb.PeerMsg{o, m}
		}
	}
	x.done = desc
	x.mu.Unlock()
	return out, cut
}

// gated reports whether a replayed message would act through a gated
// class (a recovery record or a confirmation the honest party trusts).
func gated(honest int, m *pb.PeerMsg) bool {
	if !knownOpen {
		return false
	}
	switch {
	case honest == 0 && (len(m.GetHelloReply().GetRecent()) > 0 || m.GetHelloReply().GetFresh()):
		return true
	case honest == 1 && (len(m.GetWitness().GetRecent()) > 0 || len(m.GetWitness().GetHeldOk()) > 0 || len(m.GetWitness().GetHeldVoid()) > 0):
		return true
	}
	return false
}

// campaignSeedOf is -campaign.seed, or one from the clock, logged so that
// a failing run can be rerun.
func campaignSeedOf(t *testing.T) uint64 {
	seed := *campaignSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun: -campaign.seed=%d)", seed, seed)
	return seed
}

// TestCampaign runs the seeded random campaign with each party honest in
// turn: every step may cut the session or restart the honest party, arms
// one mutation, has both applications ask for a few requests and checks
// the honest site's replies.
func TestCampaign(t *testing.T) {
	seed := campaignSeedOf(t)
	for honest := range 2 {
		t.Run(fmt.Sprintf("honest%d", honest), func(t *testing.T) {
			campaign(t, honest, seed, *campaignSteps, false)
		})
	}
}

// TestCampaignSlabFDs is the campaign with the honest party taking its
// module's bulk slabs as sealed memfds read in place (kord party
// --module-slab-fds, the same-host slab path of issue 34), and its
// application asking on the Unix socket for slab_fds, so that whole slabs
// are handed on to it as memfds: the adversary meets the honest party on
// that path, and every check holds there too.
func TestCampaignSlabFDs(t *testing.T) {
	if !socket.SlabFDSupported {
		t.Skip("slab memfds need Linux")
	}
	seed := campaignSeedOf(t)
	for honest := range 2 {
		t.Run(fmt.Sprintf("honest%d", honest), func(t *testing.T) {
			before, handed := socket.MappedSlabs(), client.HandedMessages()
			campaign(t, honest, seed, *campaignSteps, true)
			if socket.MappedSlabs() == before {
				t.Fatal("the honest party mapped no slab: the campaign never took the memfd path")
			}
			if client.HandedMessages() == handed {
				t.Fatal("no slab was handed on to the honest application: the campaign never took the hand-off")
			}
			t.Logf("%d slabs mapped at the honest party, %d handed on to its application", socket.MappedSlabs()-before, client.HandedMessages()-handed)
		})
	}
}

// campaign runs steps seeded steps against honest; slabFDs: the honest
// party takes its module's bulk slabs as sealed memfds.
func campaign(t *testing.T, honest int, seed uint64, steps int, slabFDs bool) {
	r := rand.New(rand.NewPCG(seed, uint64(honest)))
	o := newOracle(t, false)
	w := newWorldOpts(t, honest, o, worldOpts{slabFDs: slabFDs})
	mapped, handed := socket.MappedSlabs(), client.HandedMessages()
	mx := &mutator{w: w, r: rand.New(rand.NewPCG(seed, uint64(honest)+2))}
	w.px.setHook(mx.hook)
	id := uint64(1)
	for step := range steps {
		switch v := r.IntN(20); {
		case v < 5:
			w.px.cut()
		case v == 5:
			w.restart(honest)
		}
		dir := r.IntN(2)
		kind, typ := mutations[r.IntN(len(mutations))], msgTypes[dir][r.IntN(len(msgTypes[dir]))]
		nth := r.IntN(2)
		switch typ {
		case "hello", "hello_reply", "witness", "sync_done":
			w.px.cut() // a handshake to act on
			nth = 0
		}
		next := func() uint64 { id++; return id - 1 }
		var only []*req
		var comp string
		var undo func()
		if c := composites[r.IntN(len(composites))]; r.IntN(8) == 0 && composeGate(c) == "" {
			var ok bool
			if only, comp, undo, ok = mx.compose(o, r, c, next); !ok {
				comp, undo = "", nil
			}
		}
		if comp == "" {
			mx.arm(kind, dir, typ, nth)
		}
		qs := make([]*req, 1+r.IntN(4))
		for i := range qs {
			qs[i] = randomReq(r, next())
		}
		start := time.Now()
		if len(only) > 0 {
			o.askHonest(only)
		}
		o.ask(qs)
		d := mx.disarm()
		if undo != nil {
			undo()
			d = comp
			mx.mu.Lock()
			if mx.forged > 0 {
				d += fmt.Sprintf(": %d confirmations forged", mx.forged)
			}
			mx.forged = 0
			mx.mu.Unlock()
		}
		if d != "" {
			total.mutated.Add(1)
			t.Logf("step %d: %s (%v)", step, d, time.Since(start).Round(time.Millisecond))
		}
		total.steps.Add(1)
		if t.Failed() {
			return
		}
	}
	// Batches of slabs only are few in the campaign (the seed decides):
	// two more steps ask for a bulk alone in its batch, which takes the
	// memfd path and is handed on, under a mutation; if neither got that
	// far (a mutation may end the batch before its collect), plain ones
	// follow.
	for try := 0; slabFDs && !t.Failed() && try < 4 && (try < 2 || socket.MappedSlabs() == mapped || client.HandedMessages() == handed); try++ {
		var q *req
		for q == nil || q.count < 8 {
			q = derivedReq(r, id, fss.Params{Type: fss.DCF, InBits: 12, OutBits: 12})
		}
		id++
		if try < 2 {
			dir := r.IntN(2)
			mx.arm(mutations[r.IntN(len(mutations))], dir, msgTypes[dir][r.IntN(len(msgTypes[dir]))], 0)
		}
		o.ask([]*req{q})
		if d := mx.disarm(); d != "" {
			total.mutated.Add(1)
			t.Logf("bulk step: %s", d)
		}
		total.steps.Add(1)
	}
	// The campaign must have done something: pairs checked end to end.
	o.mu.Lock()
	n, un, cl := len(o.delivered), o.unpaired, fmt.Sprint(o.classes)
	o.mu.Unlock()
	if n == 0 {
		t.Fatalf("no output was delivered at the honest site in %d steps", steps)
	}
	t.Logf("%d outputs delivered at the honest site, %d without a partner output at the adversary's module; refusals by class %s", n, un, cl)
}
