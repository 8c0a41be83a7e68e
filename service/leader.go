package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// The per-batch protocol of a peer session (docs/protocol.md: hello and
// witness, batches, replies, digests, confirmations) is run by two types:
// leader is party 0's side of one session and follower (follower.go)
// party 1's. Each holds its session's state as fields and runs its stages
// (party 0: sender, receiver, watchdog; party 1: preparer and finisher)
// as methods over a peerLink, which carries the session's messages in
// order both ways and is all they know of the transport: the gRPC
// PeerLink stream, either end, is one; memLink an in-process one. What
// outlives a session — the queue, the pending claims, held batches, spent
// and void notices, recovery — stays with the Party.

// peerLink carries one peer session's messages, in order, both ways. Send
// may be called while another goroutine is in Recv, but not concurrently
// with another Send. A link ends (Recv and Send fail) when the context it
// was opened with ends.
type peerLink interface {
	Send(*pb.PeerMsg) error
	Recv() (*pb.PeerMsg, error)
}

// flight is a batch party 0 has sent and not yet delivered.
type flight struct {
	seq   uint64
	jobs  []*job
	segs  []segment
	first uint64
	tier  msg.Tier
	sent  time.Time
	// voidCover: the void reports sent before this batch and with it
	// (void.go); its reply shows them read.
	voidCover uint64
}

func frameBytes(f socket.Frames) uint64 { return uint64(len(f.Data)) }

// leader is party 0's side of one peer session.
type leader struct {
	p    *Party
	link peerLink
	// cancel ends the session: the context the link was opened with.
	cancel context.CancelFunc

	// Set by the handshake.
	hr         *pb.HelloReply // party 1's hello: what it reads (packed items, bulk runs)
	next       uint64         // the counter the next batch starts at (sender only)
	transcript []byte         // the hash chain over the batches sent (sender only)

	mu      sync.Mutex
	flights []*flight // sent and not yet delivered, in order
	// skipped: a batch party 1 skipped whose abandon failed (receiver
	// only); its requests are settled by lost, once no stage can send.
	skipped *flight
	missing []uint64

	sendMu sync.Mutex     // one Send at a time (sender and receiver both send)
	slots  chan struct{}  // one per batch in flight
	errc   chan error     // the first failure of any stage ends the session
	wg     sync.WaitGroup // the stages

	// endMu orders a batch's delivery and its confirmation against the
	// session's end (flush): a batch is delivered only while ended is
	// false, and its confirmation is sent before the link is half-closed.
	endMu    sync.Mutex
	ended    bool
	recvDone chan struct{} // closed when the receiver stops
}

func newLeader(p *Party, link peerLink, cancel context.CancelFunc) *leader {
	return &leader{p: p, link: link, cancel: cancel, slots: make(chan struct{}, p.cfg.InFlight), errc: make(chan error, 3),
		recvDone: make(chan struct{})}
}

// session runs one party-0 session over the gRPC peer link (or the
// in-process one of a LocalPair): handshake
// with the rollback witness, then the batch pipeline, until anything goes
// wrong.
func (p *Party) session(ctx context.Context) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var link peerLink
	var err error
	if p.local != nil {
		link, err = p.local(sctx)
	} else {
		link, err = p.peer.Session(sctx)
	}
	if err != nil {
		return fmt.Errorf("peer: %w", err)
	}
	return p.lead(sctx, cancel, link)
}

// lead runs party 0's side of a session over link, which ends when
// cancel is called.
func (p *Party) lead(ctx context.Context, cancel context.CancelFunc, link peerLink) error {
	l := newLeader(p, link, cancel)
	if err := l.handshake(ctx); err != nil {
		return err
	}
	p.peerUp.Store(true)
	defer func() {
		p.downAt.Store(time.Now().UnixNano())
		p.peerUp.Store(false)
	}()
	return l.run(ctx)
}

// handshake exchanges hello and witness with party 1 and resynchronises
// the modules' counters; it settles what the last session (or a restart
// on either side) left open.
func (l *leader) handshake(ctx context.Context) (err error) {
	p := l.p
	chal, err := p.mod.Challenge(ctx)
	if err != nil {
		return moduleErr(err)
	}
	spent, refs, _ := p.takeSpent(p.run)
	// The report is kept until the handshake completes: a hello that
	// reached a party going down (or a session that failed before the
	// witnesses were exchanged) must not lose it for the peer that
	// answers next, whose application may resend those ids.
	defer func() {
		if err != nil {
			p.restoreSpent(refs)
		}
	}()
	if err := l.link.Send(&pb.PeerMsg{M: &pb.PeerMsg_Hello{Hello: &pb.Hello{Run: p.run, DeliveredThrough: p.delivered.Load(), Challenge: chal,
		EarlyFrames: !p.cfg.oneShotReplies, Spent: spent, Confirms: p.keptConfirms(), Version: ProtocolVersion}}}); err != nil {
		return fmt.Errorf("peer: %w", err)
	}
	m, err := recvWithin(ctx, l.link, p.cfg.PeerTimeout, "hello reply")
	if err != nil {
		return fmt.Errorf("peer: %w", err)
	}
	hr := m.GetHelloReply()
	if hr == nil {
		return fmt.Errorf("%w: expected a hello reply", errDesync)
	}
	if err := checkVersion(hr.Version); err != nil {
		p.log.Error("peer session refused", "err", err)
		return err
	}
	// Requests party 1 burned (its module opened our frames for them and
	// the batch was not delivered) are not batched again.
	if n := p.q.failSpent(peerSpent(hr.Spent, p.run)); n > 0 {
		p.m.rejects.WithLabelValues(ErrClassSpent).Add(float64(n))
	}
	rc, err := p.mod.Reconcile(ctx, hr.Witness)
	if err != nil {
		p.m.rejects.WithLabelValues("witness").Inc()
		return fmt.Errorf("module: reconciling the peer's witness: %w", err)
	}
	p.noteReconciled(rc)
	w, err := p.mod.Witness(ctx, hr.Challenge)
	if err != nil {
		return moduleErr(err)
	}
	wm := &pb.Witness{Witness: w}
	if len(hr.Recent) > 0 {
		// Party 1 holds batches for an earlier run of this party: settled
		// from this site's own record alone (recover.go).
		ok, void, spent, confirms := p.settleHeldOwn(hr.Recent)
		setHeldLists(wm, ok, void, spent, confirms)
		// A resend of a held id answered void here gets void too (the
		// same class at both sites, also in a later session).
		voids := make([]*recoverRec, len(void))
		for i, id := range void {
			voids[i] = &recoverRec{shape: shape{app: id.app, id: id.id}, class: ErrClassVoid}
		}
		p.ledger.answered(void, ErrClassVoid)
		p.keepRecovered(voids)
	}
	if p.ledger.takeRestart() {
		// This party's first session after its own restart: its record,
		// narrowed by party 1's lists, answers its application's resends.
		p.keepRecovered(p.ownRecovery(hr.Recent, false))
	}
	doubt := p.settleDoubt(hr.Fresh)
	if hr.Fresh {
		// Party 1 restarted: what this site delivered, and what it failed
		// spent since, for its application's resends.
		wm.Recent = append(p.listItems(), tombstones(doubt, ErrClassSpent)...)
	}
	if err := l.link.Send(&pb.PeerMsg{M: &pb.PeerMsg_Witness{Witness: wm}}); err != nil {
		return fmt.Errorf("peer: %w", err)
	}
	if m, err = recvWithin(ctx, l.link, p.cfg.PeerTimeout, "sync done"); err != nil {
		return fmt.Errorf("peer: %w", err)
	}
	if sd := m.GetSyncDone(); sd == nil || sd.NextCounter != rc.Next {
		return fmt.Errorf("%w: the modules did not agree on a counter after the witness exchange", errDesync)
	}
	p.noteSync(rc.Next)
	l.hr, l.next, l.transcript = hr, rc.Next, newTranscript(chal, hr.Challenge)
	return nil
}

// run runs the batch pipeline until a stage fails (or ctx ends), then
// returns the batches still in flight to the queue.
func (l *leader) run(ctx context.Context) error {
	l.wg.Add(4)
	go l.sender(ctx)
	go l.receiver(ctx)
	go l.watchdog(ctx)
	go func() {
		defer l.wg.Done()
		l.p.sendVoids(ctx, l.send)
	}()
	err := <-l.errc
	l.flush()
	l.cancel()
	l.wg.Wait()
	l.lost()
	l.p.voidsUnread()
	return err
}

// errSessionEnding: a batch reply read after the session began to end;
// the batch is not delivered (flush).
var errSessionEnding = errors.New("service: the peer session is ending")

// halfCloser is a link that can end its sending side alone (the gRPC
// stream's CloseSend): what was sent before is still written.
type halfCloser interface{ CloseSend() error }

// flush ends the session's sending side in order. From now on no batch is
// delivered (reply); what was sent — a confirmation above all — reaches
// party 1 before the link is torn down. Cancelling a gRPC stream can drop
// messages its transport has queued and not yet written: a confirmation
// lost so (as when this site's module failed on the next batch) leaves
// party 1 to fail spent a batch this site delivered: a share at one site
// only. So flush half-closes the link and
// reads, dropping, what party 1 still sends until it ends its side on
// reading the close, for at most confirmLinger. A link that cannot
// half-close is torn down at once, as before.
func (l *leader) flush() {
	l.endMu.Lock()
	l.ended = true
	l.endMu.Unlock()
	hc, ok := l.link.(halfCloser)
	if !ok {
		return
	}
	// The bound starts before the send lock: a Send blocked on a peer
	// that reads nothing ends with the link.
	t := time.AfterFunc(confirmLinger, l.cancel)
	defer t.Stop()
	l.sendMu.Lock()
	err := hc.CloseSend()
	l.sendMu.Unlock()
	if err != nil {
		return
	}
	<-l.recvDone // the receiver drops what comes after ended (receiver)
}

// fail ends the session with err (the first stage to fail wins; errc has
// room for each stage's one error).
func (l *leader) fail(err error) { l.errc <- err }

// send sends m to party 1 (the sender's batches and the receiver's
// confirmations share the link).
func (l *leader) send(m *pb.PeerMsg) error {
	l.sendMu.Lock()
	defer l.sendMu.Unlock()
	return l.link.Send(m)
}

// sender takes batches from the queue, submits them to the module and
// sends them, keeping at most InFlight outstanding.
func (l *leader) sender(ctx context.Context) {
	defer l.wg.Done()
	for {
		select {
		case l.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		jobs, tier, err := l.p.q.take(ctx, l.p.cfg.Batch)
		if err != nil {
			return
		}
		if err := l.sendBatch(ctx, jobs, tier); err != nil {
			l.fail(err)
			return
		}
	}
}

// sendBatch submits one batch of jobs to the module under tier and sends
// it with this module's frames.
func (l *leader) sendBatch(ctx context.Context, jobs []*job, tier msg.Tier) error {
	p := l.p
	queued := p.q.size()
	p.m.pending.Set(float64(queued))
	now := time.Now()
	for _, j := range jobs {
		if j.batched.IsZero() {
			j.batched = now
		}
	}
	items := make([]*pb.BatchItem, len(jobs))
	for i, j := range jobs {
		items[i] = j.item
	}
	var runs []uint32
	if l.hr.Bulk && !p.cfg.noBulk {
		runs = bulkRuns(items)
	}
	segs := segmentsOf(jobs, runs)
	calls, wipe := submitCalls(nil, jobs, segs, tier)
	var first uint64
	var count int
	var packed socket.Frames
	res, err := p.mod.Do(ctx, calls, true)
	wipe()
	if err == nil {
		first, count, packed, err = submitted(res, segs)
	}
	if err == nil && first != l.next {
		err = fmt.Errorf("%w: module assigned counter %d, expected %d", errDesync, first, l.next)
	}
	if err != nil {
		jobs = failRefusedCorrs(res, segs, jobs)
		p.back(jobs, ErrClassSpent, "module refused the submission") // nothing opened: they go back
		return moduleErr(err)
	}
	l.next += uint64(count)
	p.seq++
	fl := &flight{seq: p.seq, jobs: jobs, segs: segs, first: first, tier: tier, sent: time.Now()}
	for _, j := range jobs {
		j.run, j.seq = p.run, fl.seq
	}
	var pk *pb.PackedItems
	if l.hr.PackedItems {
		pk = packItems(items)
	}
	app := jobs[0].app // a batch is one application's (queue.take)
	l.transcript = chain(withApp(l.transcript, app), fl.seq, tier, fl.first, items, pk != nil)
	if pk != nil {
		items = nil
	}
	void := p.takeVoid()
	voidIDs, voidApps := splitRids(void)
	// A failed send ends the session, which sends them again.
	fl.voidCover = p.voidsSent(void)
	l.mu.Lock()
	l.flights = append(l.flights, fl)
	l.mu.Unlock()
	p.inFlight.Add(1)
	p.m.inFlight.Inc()
	// Counted before the send, as party 1 counts its reply's: the batch
	// may be answered and finished before this goroutine runs again.
	n := frameBytes(packed)
	p.frameBytes.Add(n)
	err = l.send(&pb.PeerMsg{M: &pb.PeerMsg_Batch{Batch: &pb.Batch{Seq: fl.seq, Tier: uint32(tier), FirstCounter: fl.first,
		Items: items, PackedItems: pk, Transcript: l.transcript, FrameData: packed.Data, FrameLens: packed.Lens, Queued: uint64(queued),
		VoidIds: voidIDs, VoidApps: voidApps, Runs: runs, App: app}}})
	if err != nil {
		p.frameBytes.Add(^(n - 1)) // not sent after all
		return fmt.Errorf("peer: %w", err)
	}
	if n > 0 {
		p.m.frameBytes.WithLabelValues(tier.String()).Add(float64(n))
	}
	return nil
}

// head is the oldest batch in flight (nil: none).
func (l *leader) head() *flight {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.flights) == 0 {
		return nil
	}
	return l.flights[0]
}

// drop removes the oldest batch in flight, answered.
func (l *leader) drop() {
	l.mu.Lock()
	l.flights = l.flights[1:]
	l.mu.Unlock()
	l.p.inFlight.Add(^uint64(0))
	l.p.m.inFlight.Dec()
}

// receiver reads party 1's replies and finishes the batches in order.
// Once the session ends it reads on, dropping what it reads, until party 1
// ends its side (flush).
func (l *leader) receiver(ctx context.Context) {
	defer l.wg.Done()
	defer close(l.recvDone)
	failed := false
	for {
		m, err := l.link.Recv()
		if err != nil {
			if !failed {
				l.fail(fmt.Errorf("peer: %w", err))
			}
			return
		}
		if failed || l.isEnded() {
			continue
		}
		if vn := m.GetVoidNotice(); vn != nil {
			l.p.peerVoid(vn.Ids, vn.Apps)
			continue
		}
		if err := l.reply(ctx, m.GetBatchReply()); err != nil {
			l.fail(err)
			failed = true
		}
	}
}

// isEnded reports whether the session is ending (flush).
func (l *leader) isEnded() bool {
	l.endMu.Lock()
	defer l.endMu.Unlock()
	return l.ended
}

// confirmLinger bounds how long a session's end waits for party 1 to
// read what was sent (flush).
const confirmLinger = 2 * time.Second

// reply handles party 1's reply to the oldest batch in flight: it has the
// module open party 1's frames and collect, compares the pair digests and
// delivers and confirms the batch, or fails it. A nil error lets the
// session go on.
func (l *leader) reply(ctx context.Context, br *pb.BatchReply) error {
	p := l.p
	p.peerVoid(br.GetVoidIds(), br.GetVoidApps())
	fl := l.head()
	if br == nil || fl == nil || br.Seq != fl.seq {
		return fmt.Errorf("%w: unexpected message from the peer", errDesync)
	}
	p.voidsRead(fl.voidCover) // party 1 read this batch, so what went before
	if br.Error != "" && br.SessionContinues && br.ErrorClass == ErrClassUnmatched && len(br.FrameData) == 0 {
		// Refused for unmatched ids alone, before any frame was
		// opened; party 1's module has moved past the batch.
		l.drop()
		p.m.rejects.WithLabelValues(ErrClassUnmatched).Inc()
		actx, cancel := context.WithTimeout(ctx, p.cfg.PeerTimeout)
		_, aerr := p.mod.Submit(actx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: batchLast(fl.first, fl.jobs)})
		cancel()
		if aerr != nil {
			// The module may hold the batch's outputs: the session ends
			// and the resync moves both modules past them. The batch's
			// requests (no module opened a frame of them) are answered or
			// batched again once the session has stopped (lost), not now,
			// when a batch of this ending session could still take them.
			l.skipped, l.missing = fl, br.Missing
			return fmt.Errorf("module: abandoning skipped batch %d: %w", fl.seq, aerr)
		}
		p.unmatched(fl.jobs, br.Missing)
		<-l.slots
		return nil
	}
	if br.Error != "" {
		l.drop()
		p.m.rejects.WithLabelValues(peerClass(br.ErrorClass)).Inc()
		p.failBatch(fl.jobs, br)
		return fmt.Errorf("%w: peer: %s", errDesync, br.Error)
	}
	if br.FirstCounter != fl.first {
		return fmt.Errorf("%w: peer used counter %d for batch %d, we used %d", errDesync, br.FirstCounter, fl.seq, fl.first)
	}
	p.rounds.Add(1)
	p.m.rounds.Inc()
	frames := socket.Frames{Data: br.FrameData, Lens: br.FrameLens}
	calls := finishCalls(nil, frames, fl.jobs, fl.segs, fl.first)
	res, err := p.doFinish(ctx, batchApp(fl.jobs), calls)
	if err != nil {
		if frames.Count() > 0 {
			markOpenedSegs(fl.jobs, fl.segs, fl.tier, -1) // whether it opened them is unknown
		}
		// The batch is spent here (lost); party 1, which holds it, fails
		// it alike now instead of at a next session that a dead module
		// may never allow.
		l.send(&pb.PeerMsg{M: &pb.PeerMsg_Confirm{Confirm: &pb.Confirm{Seq: fl.seq, ErrorClass: ErrClassSpent}}})
		return moduleErr(err)
	}
	// From here the jobs covered by an accepted frame are spent:
	// they are delivered or failed, never batched again.
	refused := false
	if frames.Count() > 0 {
		markOpenedSegs(fl.jobs, fl.segs, fl.tier, framesOpened(res[0]))
		refused = res[0].Err == nil && res[0].Frames != nil && res[0].Frames.Accepted != frames.Count()
	}
	reps, digest, conf, err := outputs(res, frames, fl.jobs, fl.segs, fl.first)
	if br.DigestFollows {
		// Party 1 sent its frames ahead of its keys' digest, so both
		// modules generated this batch at the same time; the digest (or
		// party 1's refusal) comes now.
		br2, rerr := l.recvDigest(fl.seq)
		p.peerVoid(br2.GetVoidIds(), br2.GetVoidApps())
		if rerr != nil {
			wipeJobReplies(fl.jobs, reps)
			return rerr
		}
		if br2.Error != "" {
			wipeJobReplies(fl.jobs, reps)
			l.drop()
			p.m.rejects.WithLabelValues(peerClass(br2.ErrorClass)).Inc()
			p.failBatch(fl.jobs, br2)
			return fmt.Errorf("%w: peer: %s", errDesync, br2.Error)
		}
		br.Digest = br2.Digest
	}
	class := ErrClassSpent
	if refused {
		class = ErrClassTampered
	}
	if err == nil && !bytes.Equal(digest, br.Digest) {
		err = fmt.Errorf("%w: the peer's keys do not pair with ours (batch %d)", errDesync, fl.seq)
		class = ErrClassTampered
		p.mismatch(fl.seq, fl.first, batchLast(fl.first, fl.jobs), fl.jobs)
	}
	if err != nil {
		wipeJobReplies(fl.jobs, reps)
		l.drop()
		why := fmt.Sprintf("batch %d not delivered: the two modules' frames or keys disagreed", fl.seq)
		if class == ErrClassSpent {
			why = fmt.Sprintf("batch %d not delivered: %v", fl.seq, err)
		}
		p.back(fl.jobs, class, why)
		// Party 1 fails the batch alike and ends the session on reading
		// it; flush lets it arrive before the link is torn down.
		l.send(&pb.PeerMsg{M: &pb.PeerMsg_Confirm{Confirm: &pb.Confirm{Seq: fl.seq, ErrorClass: class}}})
		return err
	}
	// Delivery and its confirmation are one step against the session's
	// end: a batch is not delivered once flush has begun, and a
	// confirmation sent goes out before the link's half-close.
	l.endMu.Lock()
	defer l.endMu.Unlock()
	if l.ended {
		wipeJobReplies(fl.jobs, reps)
		return errSessionEnding
	}
	l.drop()
	if !p.deliver(fl.jobs, reps) {
		// Stopping: neither delivered nor confirmed; the restarted
		// party settles the batch party 1 holds from its record.
		return errLedgerClosed
	}
	p.batches.Add(1)
	p.m.batches.Inc()
	p.keepConfirm(fl.seq, conf)
	p.delivered.Store(fl.seq)
	<-l.slots
	if err := l.send(&pb.PeerMsg{M: &pb.PeerMsg_Confirm{Confirm: &pb.Confirm{Seq: fl.seq, Ok: true, Mac: conf}}}); err != nil {
		return fmt.Errorf("peer: %w", err)
	}
	return nil
}

// recvDigest reads the second part of a batch reply sent with
// digest_follows: the digest of party 1's keys, or its refusal.
func (l *leader) recvDigest(seq uint64) (*pb.BatchReply, error) {
	m, err := l.link.Recv()
	if err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	br := m.GetBatchReply()
	if br == nil || br.Seq != seq || br.DigestFollows || len(br.FrameData) != 0 || len(br.FrameLens) != 0 {
		return nil, fmt.Errorf("%w: expected the digest of batch %d from the peer", errDesync, seq)
	}
	return br, nil
}

// watchdog ends the session when the oldest batch in flight has had no
// reply within PeerTimeout (a lost or late reply).
func (l *leader) watchdog(ctx context.Context) {
	defer l.wg.Done()
	timeout := l.p.cfg.PeerTimeout
	t := time.NewTicker(timeout / 20)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if fl := l.head(); fl != nil && time.Since(fl.sent) > timeout {
			l.fail(fmt.Errorf("%w: no reply from the peer within %v", errDesync, timeout))
			return
		}
	}
}

// lost returns the batches still in flight when the session ended (every
// stage has stopped): the jobs this module opened frames for fail spent,
// the others are batched again after the resync — unless party 1 turns
// out to have restarted (settleDoubt). The requests of a skipped batch
// whose abandon failed are answered (unmatched) or batched again.
func (l *leader) lost() {
	p := l.p
	if l.skipped != nil {
		p.unmatched(l.skipped.jobs, l.missing)
		l.skipped, l.missing = nil, nil
	}
	var back []*job
	for _, fl := range l.flights {
		back = append(back, fl.jobs...)
	}
	l.flights = nil
	p.inFlight.Store(0)
	p.m.inFlight.Set(0)
	for _, j := range back {
		j.doubt = !j.spent.Load()
	}
	p.back(back, ErrClassSpent, "the peer session ended before the batch was delivered")
}
