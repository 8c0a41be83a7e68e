package service

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// errDesync ends a session; the next one resynchronises.
var errDesync = errors.New("service: desynchronised with the peer")

// wipeReplies clears the outputs of replies that will not be delivered.
func wipeReplies(reps [][]msg.CollectResponse) {
	for _, r := range reps {
		for i := range r {
			socket.WipeKeys(r[i].Key)
			clear(r[i].Evals)
			r[i].AlphaShare, r[i].BetaShare = 0, 0
		}
	}
}

// failBatch fails the requests the peer named (with the peer's class, or
// spent when this module opened a frame for one and the class would let
// the application use α again) and returns the rest (spent.go: this
// module's spent ones fail spent).
func (p *Party) failBatch(jobs []*job, br *pb.BatchReply) {
	bad := map[uint64]string{}
	for _, id := range br.Missing {
		bad[id] = peerClass(br.ErrorClass)
	}
	var back []*job
	for _, j := range jobs {
		if class, ok := bad[j.id]; ok {
			if j.spent.Load() && pb.AlphaReusable(class) {
				class = ErrClassSpent
			}
			j.fail(class, "%s", br.Error)
			if !pb.AlphaReusable(class) {
				// In the spent log, as back does: a restarted party 1
				// answers its application's resends of the id alike.
				p.logSpent(j)
			}
			continue
		}
		back = append(back, j)
	}
	p.back(back, peerClass(br.ErrorClass), fmt.Sprintf("the peer refused the batch: %s", br.Error))
}

// noteSync records a completed handshake: the session's start and the
// counter both modules agreed on.
func (p *Party) noteSync(next uint64) {
	p.sessionAt.Store(time.Now().UnixNano())
	p.sessions.Add(1)
	p.resyncs.Add(1)
	p.m.resyncs.Inc()
	p.setNext(next, false)
	p.m.floor.Set(float64(next))
}

// noteReconciled records what the module's reconciliation of the peer's
// witness found, as soon as it returns: the module has moved forward for
// good, so a handshake that fails after it must not lose the rollback it
// found (the next reconciliation finds none).
func (p *Party) noteReconciled(rc *module.Reconciled) {
	if rc.RolledBack {
		p.m.rollbacks.Inc()
		p.log.Warn("this module's state was older than its peer knew (rollback); resynchronised forward", "next", rc.Next)
	}
}

// settleHeld delivers the held batches party 0 has delivered and
// confirmed (confirms: the hello's confirmations, confirm.go) and returns
// the others' requests to the pending set.
func (p *Party) settleHeld(run, through uint64, confirms []*pb.Confirm) {
	macs := confirmIndex(confirms)
	p.heldMu.Lock()
	held := p.held
	p.held = nil
	same := p.heldRun == run
	p.heldRun = run
	p.heldMu.Unlock()
	for _, h := range held {
		if same && h.seq <= through && h.confirmed(macs[h.seq]) {
			p.deliverHeld(h)
		} else {
			// Opened and never confirmed: spent (spent.go).
			wipeJobReplies(h.jobs, h.replies)
			p.back(h.jobs, ErrClassSpent, fmt.Sprintf("the peer session ended before party 0 confirmed batch %d", h.seq))
		}
	}
}

// resolveHeld settles, after a restart of party 0 (a new run), the
// batches held for its predecessor: party 0 named the requests whose pair
// it completed (ok, each with its confirmation: delivered when it matches
// this site's own outputs, confirm.go; failed tampered when it does not),
// those it could not (void) and those it had answered spent (spent); any
// other is failed spent as before (a party 0 that does not know the lists).
func (p *Party) resolveHeld(run uint64, ok, void, spent []rid, confirms [][]byte) {
	p.heldMu.Lock()
	held := p.held
	p.held = nil
	p.heldRun = run
	p.heldMu.Unlock()
	okSet := make(map[rid][]byte, len(ok))
	for k, id := range ok {
		okSet[id] = nil
		if k < len(confirms) {
			okSet[id] = confirms[k]
		}
	}
	voidSet := make(map[rid]bool, len(void))
	for _, id := range void {
		voidSet[id] = true
	}
	spentSet := make(map[rid]bool, len(spent))
	for _, id := range spent {
		spentSet[id] = true
	}
	for _, h := range held {
		var dj, rest []*job
		var dr [][]msg.CollectResponse
		// settle fails held item i (request k) with class, recorded first:
		// if the record refuses (the party is going down, Party.back) the
		// item stays unanswered and the next process answers it.
		settle := func(i int, k rid, class, format string) {
			wipeJobReplies(h.jobs[i:i+1], h.replies[i:i+1])
			if !p.ledger.answered([]rid{k}, class) {
				return
			}
			p.m.rejects.WithLabelValues(class).Inc()
			h.jobs[i].fail(class, format, k.id, h.seq)
		}
		for i, j := range h.jobs {
			k := rid{j.app, j.id} // party 0 names this application's request
			conf, named := okSet[k]
			switch {
			case named && sameConfirm(heldConfirm(h, i), conf):
				dj, dr = append(dj, j), append(dr, h.replies[i])
			case named:
				// Party 0 says it completed the pair, without the
				// confirmation of this site's outputs: not delivered.
				settle(i, k, ErrClassTampered, "party 0 restarted and named request %d (batch %d) complete without the confirmation of this site's keys; α spent: choose a fresh α")
			case voidSet[k]:
				settle(i, k, ErrClassVoid, "party 0 restarted and could not complete the pair of request %d (batch %d); any share of it at site 0 is void; α spent: choose a fresh α")
			case spentSet[k]:
				settle(i, k, ErrClassSpent, "party 0 failed request %d (batch %d) spent before its restart; α spent: choose a fresh α")
			default:
				wipeJobReplies(h.jobs[i:i+1], h.replies[i:i+1])
				rest = append(rest, j)
			}
		}
		if len(dj) > 0 {
			n := 0
			for i, r := range dr {
				n += len(r) + dj[i].vn
			}
			p.deliver(dj, dr)
			p.recoveredKeys.Add(uint64(n))
			p.m.recovered.Add(float64(n))
		}
		p.back(rest, ErrClassSpent, fmt.Sprintf("the peer session ended before party 0 confirmed batch %d", h.seq))
	}
}

func (p *Party) deliverHeld(h *heldBatch) {
	p.deliver(h.jobs, h.replies)
	p.batches.Add(1)
	p.m.batches.Inc()
}

// claimGrace is how long party 1 waits, within one batch, for a request
// party 0 batched and that has not reached party 1 yet: the batch, and
// every batch after it, waits that long. Past it the batch is refused for
// those ids alone (follower.skip) and party 0 retries them by themselves until
// MatchTimeout, so a stray id costs the others at most this once.
func (p *Party) claimGrace() time.Duration { return min(p.cfg.MatchTimeout, maxClaimGrace) }

// maxClaimGrace bounds claimGrace: the usual skew between two sites'
// copies of one request is well under it.
const maxClaimGrace = 100 * time.Millisecond

// duplicateIDs returns the ids that appear more than once in items.
func duplicateIDs(items []*pb.BatchItem) []uint64 {
	// Applications usually number their requests in order: strictly
	// increasing ids need no set.
	increasing := true
	for i := 1; i < len(items) && increasing; i++ {
		increasing = items[i-1].GetId() < items[i].GetId()
	}
	if increasing {
		return nil
	}
	seen := make(map[uint64]bool, len(items))
	var dup []uint64
	for _, it := range items {
		if done, ok := seen[it.GetId()]; ok {
			if !done {
				dup = append(dup, it.GetId())
				seen[it.GetId()] = true
			}
			continue
		}
		seen[it.GetId()] = false
	}
	return dup
}

// peerClass is the error class a peer's refusal is counted and reported
// under: one of the classes party 1 sends, or desync for anything else,
// so a peer cannot mint metric labels or application error classes.
func peerClass(c string) string {
	switch c {
	case ErrClassBadRequest, ErrClassMismatch, ErrClassPeer, ErrClassDesync, ErrClassTampered, ErrClassSpent, ErrClassUnmatched, ErrClassVoid:
		return c
	}
	return ErrClassDesync
}

// unmatched handles, at party 0, a batch party 1 skipped because it had
// no request for the ids in missing: no module opened a frame of it, so
// no job is spent. The others go back to the front of the queue; a
// missing one fails unmatched (α reusable) once MatchTimeout has passed
// since it was first batched, and is otherwise retried alone after a
// short delay (party 1 does not wait for it again).
func (p *Party) unmatched(jobs []*job, missing []uint64) {
	miss := make(map[uint64]bool, len(missing))
	for _, id := range missing {
		miss[id] = true
	}
	var again, retry []*job
	n := 0
	for _, j := range jobs {
		switch {
		case !miss[j.id]:
			again = append(again, j)
		case time.Since(j.batched) >= p.cfg.MatchTimeout:
			j.fail(ErrClassUnmatched, "party 1 had no request with id %d within the match timeout (%v); nothing was generated for it",
				j.id, p.cfg.MatchTimeout)
			n++
		default:
			j.missed = true
			retry = append(retry, j)
		}
	}
	if n > 0 {
		p.m.rejects.WithLabelValues(ErrClassUnmatched).Add(float64(n))
	}
	p.q.requeue(again)
	if len(retry) > 0 {
		time.AfterFunc(p.retryDelay(), func() { p.m.pending.Set(float64(p.q.pushAll(retry))) })
	}
}

// retryDelay is how long party 0 waits before batching an unmatched
// request again.
func (p *Party) retryDelay() time.Duration { return min(p.cfg.MatchTimeout/10, 50*time.Millisecond) }

// moduleErr says that err came from this party's module, once: the
// module's own errors already start with "module: ".
func moduleErr(err error) error {
	if strings.HasPrefix(err.Error(), "module: ") {
		return err
	}
	return fmt.Errorf("module: %w", err)
}
