package adversary

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Composite mutations: the attacks of attacks_test.go composed by the
// campaign from its own history, so that a random run finds them too
// once their gate is open. One field edit at a time cannot: a forged
// recovery record needs a delivered counter and its pair tag, a forged
// confirmation needs a batch whose tags disagree.
//
//   - forge-record: a recovery record for an output the honest site
//     delivered, under a new id or the same id asked again with a fresh
//     α, in the next handshake (after restarting the honest party 1, the
//     only time party 1 reads records);
//   - redraw-confirm (party 1 honest): the adversary's module draws
//     derived keys of another width and correlations of another shape at
//     the counters of the step's requests, and party 0's refusing
//     confirmations are turned into ok.
var composites = []string{"forge-record", "redraw-confirm"}

// composeGate is the class each composite acts through (gate's names).
func composeGate(kind string) string {
	if !knownOpen {
		return ""
	}
	if kind == "forge-record" {
		return recoveryAttack
	}
	return confirmAttack
}

// compose sets up composite kind for one step: it returns the requests
// only the honest application asks for (forge-record), a description,
// and false when the history does not allow it yet. undo ends it.
func (x *mutator) compose(o *oracle, r *rand.Rand, kind string, next func() uint64) (honestOnly []*req, desc string, undo func(), ok bool) {
	w := x.w
	switch kind {
	case "forge-record":
		y := o.deliveredBound(r)
		if y == nil {
			return nil, "", nil, false
		}
		target := y.id
		if r.IntN(2) == 0 {
			target = next()
		}
		rec, err := craftRecord(w, o, y.id)
		if err != nil {
			return nil, "", nil, false
		}
		rec.Item.Id = target
		x.mu.Lock()
		x.record, x.recordIn = rec, 0
		x.mu.Unlock()
		if w.honest == 1 {
			w.restart(1)
		} else {
			w.px.cut()
		}
		var in int
		for end := time.Now().Add(endBound); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			x.mu.Lock()
			in = x.recordIn
			x.mu.Unlock()
			if in > 0 && synced(w.px, in-1)() {
				break
			}
		}
		undo = func() {
			x.mu.Lock()
			x.record = nil
			x.mu.Unlock()
		}
		if in == 0 {
			undo()
			return nil, "", nil, false
		}
		return []*req{boundReq(r, target, y.p)}, fmt.Sprintf("forge-record: request %d's counters under id %d (session %d)", y.id, target, in), undo, true
	case "redraw-confirm":
		if w.honest != 1 {
			return nil, "", nil, false
		}
		w.adv.setRewrite(redraw)
		x.mu.Lock()
		x.forgeConfirm = true
		x.mu.Unlock()
		q := derivedReq(r, next(), fss.Params{Type: fss.DCF, InBits: 10, OutBits: 10})
		return []*req{q}, "redraw-confirm", func() {
			w.adv.setRewrite(nil)
			x.mu.Lock()
			x.forgeConfirm = false
			x.mu.Unlock()
		}, true
	}
	return nil, "", nil, false
}

// redraw has the adversary's module draw derived keys one bit wider and
// correlations of another shape of as many counters than its party asked.
func redraw(calls []socket.Call) []socket.Call {
	out := append([]socket.Call(nil), calls...)
	for i := range out {
		if out[i].Submit == nil {
			continue
		}
		sr := *out[i].Submit
		if redrawCorr(&sr) || redrawDerived(&sr) {
			out[i].Submit = &sr
		}
	}
	return out
}

// redrawCorr changes a correlation submission to another shape of as
// many counters (false: not one, or no such shape).
func redrawCorr(sr *msg.SubmitRequest) bool {
	if sr.Kind != msg.SubmitCorrelation || sr.Corr == nil {
		return false
	}
	want, err := sr.Corr.Blocks()
	if err != nil {
		return false
	}
	for in := 1; in <= 16; in++ {
		for out := 1; out <= 16; out++ {
			c := *sr.Corr
			c.In, c.Out = in, out
			if b, _ := c.Blocks(); b == want && c != *sr.Corr {
				sr.Corr = &c
				return true
			}
		}
	}
	return false
}

// redrawDerived widens a derived submission's output by one bit.
func redrawDerived(sr *msg.SubmitRequest) bool {
	switch {
	case sr.Kind == msg.SubmitBulk && sr.Bulk != nil && sr.Bulk.Mode == msg.Derived && sr.Bulk.OutBits < 64:
		b := *sr.Bulk
		b.OutBits++
		sr.Bulk = &b
	case sr.Kind == msg.SubmitShares && len(sr.Shares) > 0 && sr.Shares[0].Mode == msg.Derived:
		sh := append([]msg.Share(nil), sr.Shares...)
		for i := range sh {
			if sh[i].Mode == msg.Derived && sh[i].OutBits < 64 {
				sh[i].OutBits++
			}
		}
		sr.Shares = sh
	default:
		return false
	}
	return true
}

// composite applies the armed composite to m (mutator.hook, x.mu held):
// it appends the forged record to the next recovery list, and turns a
// refusing confirmation into ok. It reports whether it acted.
func (x *mutator) composite(s *session, dir int, m *pb.PeerMsg) bool {
	switch {
	case x.record != nil && x.w.honest == 0 && dir == from1 && m.GetHelloReply() != nil:
		hr := m.GetHelloReply()
		hr.Recent = append(hr.Recent, x.record)
	case x.record != nil && x.w.honest == 1 && dir == from0 && m.GetWitness() != nil:
		wm := m.GetWitness()
		wm.Recent = append(wm.Recent, x.record)
	case x.forgeConfirm && dir == from0 && m.GetConfirm() != nil && !m.GetConfirm().Ok:
		m.GetConfirm().Ok, m.GetConfirm().ErrorClass = true, ""
		x.forged++
		return true
	default:
		return false
	}
	x.record, x.recordIn = nil, s.n
	return true
}
