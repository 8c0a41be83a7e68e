package service

import (
	"context"

	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Spent shares: the rule that keeps a batch's outcome from being an oracle
// on α (issue 18, finding 1).
//
// A job's shares are spent once its own module has accepted a peer frame
// covering them: the module has then rebuilt (α, β) and computed the pair
// tag, and whether the two sites' tags agree becomes observable (delivery
// or refusal). On the keystream tier a host or the network can flip chosen
// bits of both frames so that the tags agree exactly when one bit of the
// two α shares agrees; if the same shares were submitted again after a
// refusal, the next batch would test the next bit. So a spent job is never
// submitted again: if its batch does not end in delivery it fails with
// ErrClassTampered (the digests or frames disagreed) or ErrClassSpent
// (anything else), and the application must choose a fresh α (see
// kordpb.Classes for every class and whether α may be used again). A job
// whose module accepted no frame for it (the frame was refused for its
// authentication or length — an outcome that depends on no secret —, the
// batch was refused before frames were opened, or it was never submitted)
// goes back to be batched again under a fresh counter. Derived jobs send
// no frame: their α is drawn by the modules from the counter, so a retry
// draws a new one and they always go back.
//
// Every path that ends a batch without delivery goes through Party.back,
// and queue.requeue and pending.putBack fail a spent job rather than queue
// it. The paths, and what each does now:
//
// Party 0 (leader.go: sender, receiver, watchdog):
//   - submission to its module fails (sender): nothing opened; the jobs
//     go back, the session ends.
//   - party 1 refuses before opening frames (follower.prepare: transcript,
//     counter, duplicate id, mismatch, peer): the ids it names fail with
//     its class (bad_request, mismatch, peer: α reusable), the rest go
//     back.
//   - party 1 refuses after opening frames (follower.finish: a refused frame,
//     a module error, a frame sent early and its digest refused): party 1
//     names its spent ids with class tampered or spent and party 0 fails
//     them with that class; party 0's own spent jobs fail spent whatever
//     the class said.
//   - its module opens party 1's frames (receiver): jobs covered by an
//     accepted frame are marked spent (all framed jobs when the module
//     call failed and the count is unknown).
//   - digests differ: the spent jobs fail tampered; the module abandons
//     the batch's counters with Mismatch set (counted by both modules);
//     kord_rejects_total{class="pair_mismatch"} counts it and a warning
//     names the batch and counters; Confirm{ok: false, error_class:
//     tampered} tells party 1, which does the same.
//   - a frame of party 1 refused, or the collect failing, after others
//     were opened: the spent jobs fail tampered (refused frame) or spent,
//     Confirm carries the class.
//   - session lost (stream error, watchdog timeout, a digest that never
//     came, a desync) with batches in flight: each flight's spent jobs
//     fail spent, the others go back and are batched after the resync.
//
// Party 1 (follower.go: serve, finisher, held batches):
//   - follower.prepare refuses before any frame is opened: the claimed jobs go
//     back to the pending set (not spent).
//   - follower.prepare, one-shot replies (no early frames): submit, open and
//     collect in one module call; the jobs covered by accepted frames are
//     marked spent; a failure after that fails them with the refusal.
//   - follower.finish, early frames: its frames leave first, then its module
//     opens party 0's; a refused frame or a module error fails the spent
//     jobs (tampered / spent) and names them in the refusal.
//   - a held batch (answered, waiting for party 0's confirmation): every
//     framed job in it is spent. Confirm ok: delivered. Confirm not ok:
//     failed with the confirmation's class (tampered by default; abandon
//     with Mismatch, pair_mismatch counted and logged, also when party 0's
//     tampered refusal was for a refused frame, which party 0 counts only
//     as a frame reject). Session lost: at
//     the next hello, batches party 0 says it delivered are delivered, the
//     others fail spent.
//   - prepared batches not yet finished when the session ends: spent ones
//     fail spent, the others go back.
//
// Both sites answer alike: the failed spent jobs are logged (logSpent) and
// reported to the peer at the next session start (Hello.spent from party
// 0, HelloReply.spent from party 1, by party 0 run, batch seq and id); the
// peer fails those it still holds (queued at party 0, pending at party 1)
// as spent instead of batching them again or waiting for them. The
// application still decides jointly (kordpb.Classes): a report can be lost
// with its session, and the peer then answers "peer" for that id.
//
// Resync after reconnect: the witness exchange moves both modules to a
// common counter; what either module still held for the old counters is
// dropped, and only unspent jobs are batched again (fresh counters).
// Timeouts: party 0's watchdog ends the session (as "session lost").
// Unmatched ids (issue 20): party 1 refuses a batch with ids it has no
// request for before opening any frame and without ending the session
// (follower.skip: its module skips the counters with derived filler, both
// modules abandon them); no job is spent, party 0 batches the others
// again and retries the missing ones alone until MatchTimeout, then fails
// them unmatched (α reusable). Crash or restart of a party (recover.go):
// its jobs and their applications' streams end with it; the application
// resends each unanswered request unchanged, and the restarted party
// answers it from what its peer sends at the first session: the pair
// completed by re-collecting the module's outputs (no frame opened
// again), or the class the peer failed it with (spent), or void. Jobs
// party 0 requeued from batches lost with a party 1 that turns out to
// have restarted fail spent (doubt, settleDoubt): party 1's module may
// have opened them and its spent report died with it. A module restart
// mid-batch is a module error (spent when frames were opened). Abandon:
// the party never abandons a batch it will retry except a skipped one
// (no frame opened) and abandons with Mismatch to have both modules count
// the outcome.

// markOpened records that this site's module opened the peer's frames of
// a batch of jobs under tier: accepted is how many frames it accepted, in
// order, or -1 when it is not known (the module call failed), which counts
// every framed job as opened. Keystream and MAC frames are one per framed
// share in order; a BatchMAC frame covers every framed share.
func markOpened(jobs []*job, tier msg.Tier, accepted int) {
	if accepted == 0 {
		return
	}
	k := 0 // frame index of the next framed share
	for _, j := range jobs {
		for _, s := range j.shares {
			if s.Mode == msg.Derived {
				continue
			}
			if accepted < 0 || (tier == msg.BatchMAC && accepted > 0) || k < accepted {
				j.spent.Store(true)
			}
			k++
		}
	}
}

// framesOpened reads a module Frames result for markOpened: the accepted
// count, or -1 when the call failed.
func framesOpened(r socket.Result) int {
	if r.Err != nil || r.Frames == nil {
		return -1
	}
	return r.Frames.Accepted
}

// anySpent reports whether one of jobs is spent.
func anySpent(jobs []*job) bool {
	for _, j := range jobs {
		if j.spent.Load() {
			return true
		}
	}
	return false
}

// spentIDs lists the ids of the spent jobs.
func spentIDs(jobs []*job) []uint64 {
	var ids []uint64
	for _, j := range jobs {
		if j.spent.Load() {
			ids = append(ids, j.id)
		}
	}
	return ids
}

// spentRef names a request by party 0's run, the batch it was last in,
// its id and its application identity.
type spentRef struct {
	run, seq, id uint64
	app          string
}

// maxSpentLog bounds the spent requests a party keeps to report to its
// peer at the next session start (past it the oldest go unreported: the
// peer then finds them missing, "peer").
const maxSpentLog = 1 << 16

// logSpent notes that j failed spent, to report at the next hello.
func (p *Party) logSpent(j *job) {
	if j.seq == 0 {
		return
	}
	p.spentMu.Lock()
	defer p.spentMu.Unlock()
	if len(p.spentLog) >= maxSpentLog {
		p.spentLog = p.spentLog[1:]
	}
	p.spentLog = append(p.spentLog, spentRef{run: j.run, seq: j.seq, id: j.id, app: j.app})
}

// takeSpent empties the spent log and returns its entries of run as a
// report for the peer (with the entries, to put back if it is not sent),
// and those of other runs (stale: for a restarted party 0, recover.go).
func (p *Party) takeSpent(run uint64) (*pb.SpentRequests, []spentRef, []spentRef) {
	p.spentMu.Lock()
	log := p.spentLog
	p.spentLog = nil
	p.spentMu.Unlock()
	var sr *pb.SpentRequests
	var stale []spentRef
	keep := log[:0]
	for _, r := range log {
		if r.run != run {
			stale = append(stale, r) // an earlier run of party 0: its requests are gone
			continue
		}
		if sr == nil {
			sr = &pb.SpentRequests{}
		}
		sr.Seqs = append(sr.Seqs, r.seq)
		sr.Ids = append(sr.Ids, r.id)
		sr.Apps = append(sr.Apps, r.app)
		keep = append(keep, r)
	}
	return sr, keep, stale
}

// restoreSpent puts back a report that did not reach the peer.
func (p *Party) restoreSpent(refs []spentRef) {
	if len(refs) == 0 {
		return
	}
	p.spentMu.Lock()
	defer p.spentMu.Unlock()
	p.spentLog = append(refs, p.spentLog...)
	if n := len(p.spentLog); n > maxSpentLog {
		p.spentLog = p.spentLog[n-maxSpentLog:]
	}
}

// peerSpent reads the peer's report (nil: none) for run; malformed lists
// are ignored whole.
func peerSpent(sr *pb.SpentRequests, run uint64) []spentRef {
	if sr == nil || len(sr.Seqs) != len(sr.Ids) || len(sr.Ids) > maxSpentLog {
		return nil
	}
	rs, err := joinRids(sr.Ids, sr.Apps)
	if err != nil {
		return nil
	}
	out := make([]spentRef, len(sr.Ids))
	for i := range sr.Ids {
		out[i] = spentRef{run: run, seq: sr.Seqs[i], id: sr.Ids[i], app: rs[i].app}
	}
	return out
}

// back ends a batch that will not be delivered: spent jobs fail with class
// (ErrClassTampered or ErrClassSpent) and why; the others go back to be
// batched again (party 0's queue, party 1's pending set).
func (p *Party) back(jobs []*job, class, why string) {
	if class != ErrClassTampered {
		class = ErrClassSpent
	}
	var again, spent []*job
	var ids []rid
	for _, j := range jobs {
		if j.spent.Load() {
			if !j.answered() {
				spent = append(spent, j)
				ids = append(ids, rid{j.app, j.id})
			}
			continue
		}
		again = append(again, j)
	}
	// Recorded before the application is told: a resend after a restart
	// gets the class, never outputs, and the peer, which may hold the
	// pair, is answered from this record alike (settleHeldOwn). Told
	// first, a party going down between the two would leave spent here
	// and void there.
	if len(ids) > 0 && !p.ledger.answered(ids, class) {
		// The party is going down (its state file is closed): left
		// unanswered, their streams end with it; the application resends
		// them and the next process answers from its record.
		p.log.Warn("party stopping: requests whose frames a module opened are left to the restarted party", "n", len(ids))
		spent, ids = nil, nil
	}
	for _, j := range spent {
		j.fail(class, "%s; α spent: choose a fresh α (not a new sharing of it)", why)
		p.logSpent(j)
	}
	if len(ids) > 0 {
		p.m.rejects.WithLabelValues(class).Add(float64(len(ids)))
	}
	if p.cfg.Party == 0 {
		p.q.requeue(again)
	} else {
		p.pend.putBack(again)
	}
}

// mismatch handles a batch whose two sites' keys did not pair: both
// modules abandon its counters through last with Mismatch set, so that
// they count it; the party counts it (kord_rejects_total{class=
// "pair_mismatch"}) and logs it (ids and counters only, no shares).
func (p *Party) mismatch(seq, first, last uint64, jobs []*job) {
	p.m.rejects.WithLabelValues(rejectPairMismatch).Inc()
	p.pairMismatches.Add(1)
	ids := make([]uint64, 0, len(jobs))
	for _, j := range jobs {
		ids = append(ids, j.id)
	}
	p.log.Warn("pair tags disagree: the batch's frames or keys were altered; its requests are spent",
		"seq", seq, "first_counter", first, "last_counter", last, "ids", ids)
	// WithoutCancel: the session may be ending, the module must still count it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(context.Background()), p.cfg.PeerTimeout)
	defer cancel()
	if _, err := p.mod.Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: last, Mismatch: true}); err != nil {
		p.log.Warn("abandoning a mismatched batch", "seq", seq, "err", err)
	}
}

// rejectPairMismatch is the kord_rejects_total class of batches whose pair
// tags (digests) disagreed.
const rejectPairMismatch = "pair_mismatch"

// batchLast is the last counter of a batch of jobs starting at first.
func batchLast(first uint64, jobs []*job) uint64 {
	n := 0
	for _, j := range jobs {
		n += j.keys()
	}
	return first + uint64(max(n, 1)) - 1
}
