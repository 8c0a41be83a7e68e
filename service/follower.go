package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// follower is party 1's side of one peer session (see leader.go). Its
// preparer (serve, prepare) checks, claims and submits batch k+1 while its
// finisher (finisher, finish) has the module open party 0's frames of
// batch k and answers it.
type follower struct {
	p    *Party
	link peerLink
	in   <-chan recvd // link's messages (reader)

	// Set by the handshake; transcript, expected and lastSeq are the
	// preparer's alone.
	run        uint64 // party 0's run
	early      bool   // party 0 takes party 1's frames ahead of the digest
	transcript []byte // the hash chain over the batches accepted
	expected   uint64 // the counter the next batch must start at
	lastSeq    uint64 // the last batch accepted
	// sendMu: the finisher's replies and the void sender share the link.
	sendMu sync.Mutex
	// voidCover: each answered batch's reply cover (void.go), read when
	// party 0 confirms the batch.
	coverMu   sync.Mutex
	voidCover map[uint64]uint64
}

// send sends m to party 0.
func (f *follower) send(m *pb.PeerMsg) error {
	f.sendMu.Lock()
	defer f.sendMu.Unlock()
	return f.link.Send(m)
}

// serveSession is party 1's side of a session over the gRPC peer link.
func (p *Party) serveSession(stream pb.PeerLink_SessionServer) error {
	return p.follow(stream.Context(), stream)
}

// follow runs party 1's side of a session over link, whose context is
// ctx. A newer session ends this one.
func (p *Party) follow(ctx context.Context, link peerLink) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.sessMu.Lock()
	if p.cancelPrev != nil {
		p.cancelPrev()
	}
	p.cancelPrev = cancel
	p.sessMu.Unlock()
	p.active.Lock()
	defer p.active.Unlock()
	if sctx.Err() != nil {
		return sctx.Err()
	}
	f := &follower{p: p, link: link, in: reader(sctx, link)}
	if err := f.handshake(sctx); err != nil {
		return err
	}
	p.peerUp.Store(true)
	defer p.peerUp.Store(false)
	return f.serve(sctx)
}

// handshake answers party 0's hello, exchanges witnesses and
// resynchronises the modules' counters; it settles what the last session
// (or a restart on either side) left open.
func (f *follower) handshake(ctx context.Context) (err error) {
	p := f.p
	m, err := waitRecv(ctx, f.in, p.cfg.PeerTimeout, "hello")
	if err != nil {
		return err
	}
	hello := m.GetHello()
	if hello == nil {
		return fmt.Errorf("%w: expected hello", errDesync)
	}
	if err := checkVersion(hello.Version); err != nil {
		// State this party's version, so that party 0 says so too.
		f.link.Send(&pb.PeerMsg{M: &pb.PeerMsg_HelloReply{HelloReply: &pb.HelloReply{Version: ProtocolVersion}}})
		p.log.Error("peer session refused", "err", err)
		return err
	}
	if n := p.pend.failSpent(peerSpent(hello.Spent, hello.Run)); n > 0 {
		p.m.rejects.WithLabelValues(ErrClassSpent).Add(float64(n))
	}
	// fresh: this party has had no session since it started, so what it
	// reported spent before is lost (party 0 settles its doubt so). Its
	// record is used only after a real restart (ledger.takeRestart).
	fresh := p.sessions.Load() == 0
	p.heldMu.Lock()
	newRun := p.heldRun != hello.Run
	doubt := p.held
	p.heldMu.Unlock()
	var recent []*pb.RecentItem
	if newRun {
		// Party 0 restarted (or this is the first session): what it
		// delivered of the held batches is settled at its witness.
		recent = append(p.listItems(), heldItems(doubt)...)
	} else {
		p.settleHeld(hello.Run, hello.DeliveredThrough, hello.Confirms)
	}
	chal, err := p.mod.Challenge(ctx)
	if err != nil {
		return err
	}
	w, err := p.mod.Witness(ctx, hello.Challenge)
	if err != nil {
		return err
	}
	spent, refs, stale := p.takeSpent(hello.Run)
	if newRun && len(stale) > 0 {
		// Requests of party 0's previous run that this site failed spent:
		// a restarted party 0 answers their resends alike.
		ids := make([]rid, len(stale))
		for i, r := range stale {
			ids[i] = rid{r.app, r.id}
		}
		recent = append(recent, tombstones(ids, ErrClassSpent)...)
	}
	// The report is kept until the handshake completes (leader.handshake).
	defer func() {
		if err != nil {
			p.restoreSpent(append(refs, stale...))
		}
	}()
	if err = f.link.Send(&pb.PeerMsg{M: &pb.PeerMsg_HelloReply{HelloReply: &pb.HelloReply{Challenge: chal, Witness: w,
		PackedItems: !p.cfg.itemsUnpacked, Bulk: !p.cfg.noBulk, Spent: spent, Fresh: fresh, Recent: recent,
		Version: ProtocolVersion}}}); err != nil {
		return err
	}
	if m, err = waitRecv(ctx, f.in, p.cfg.PeerTimeout, "witness"); err != nil {
		return err
	}
	pw := m.GetWitness()
	if pw == nil {
		return fmt.Errorf("%w: expected the peer's witness", errDesync)
	}
	if newRun {
		ok, void, spent, err := heldLists(pw)
		if err != nil {
			return err
		}
		p.resolveHeld(hello.Run, ok, void, spent, pw.HeldOkConfirms)
	}
	if p.ledger.takeRestart() {
		// This party's first session after its own restart: its record,
		// narrowed by party 0's lists, answers its application's resends.
		peer := pw.Recent
		for _, r := range peerSpent(hello.Spent, hello.Run) {
			peer = append(peer, &pb.RecentItem{Item: &pb.BatchItem{App: r.app, Id: r.id}, ErrorClass: ErrClassSpent})
		}
		p.keepRecovered(p.ownRecovery(peer, true))
	}
	rc, err := p.mod.Reconcile(ctx, pw.Witness)
	if err != nil {
		p.m.rejects.WithLabelValues("witness").Inc()
		return err
	}
	p.noteReconciled(rc)
	if err := f.link.Send(&pb.PeerMsg{M: &pb.PeerMsg_SyncDone{SyncDone: &pb.SyncDone{NextCounter: rc.Next}}}); err != nil {
		return err
	}
	p.noteSync(rc.Next)
	f.run, f.early = hello.Run, hello.EarlyFrames
	f.transcript = newTranscript(hello.Challenge, chal)
	f.expected, f.lastSeq = rc.Next, hello.DeliveredThrough
	return nil
}

// coverReply notes the void cover of batch seq's reply (its last, when
// party 1's frames go ahead of the digest).
func (f *follower) coverReply(seq, cover uint64) {
	f.coverMu.Lock()
	defer f.coverMu.Unlock()
	if f.voidCover == nil {
		f.voidCover = make(map[uint64]uint64)
	}
	f.voidCover[seq] = cover
}

// confirmedReply notes that party 0 read batch seq's reply (it confirmed
// or refused the batch), so the void reports sent before it.
func (f *follower) confirmedReply(seq uint64) {
	f.coverMu.Lock()
	cover, ok := f.voidCover[seq]
	delete(f.voidCover, seq)
	f.coverMu.Unlock()
	if ok {
		f.p.voidsRead(cover)
	}
}

// serve runs the session's batches until the link or a batch fails.
// Batches go through two stages: this loop checks, claims and submits
// batch k+1 (its frames ready in the module) while the finisher has the
// module open party 0's frames of batch k, so that party 1's frames of
// k+1 leave as soon as the digest of k has. The finisher sends every
// batch reply, in order.
func (f *follower) serve(ctx context.Context) error {
	// Last, once the finisher and the void sender have stopped.
	defer f.p.voidsUnread()
	work := make(chan *prepared, 1)
	fin := make(chan error, 1)
	stop := make(chan struct{}) // closed when the finisher fails
	go func() {
		fin <- f.finisher(ctx, work, stop)
	}()
	vctx, vcancel := context.WithCancel(ctx)
	vdone := make(chan struct{})
	go func() {
		defer close(vdone)
		f.p.sendVoids(vctx, f.send)
	}()
	defer func() { vcancel(); <-vdone }()
	// closeWork ends the finisher once it has answered (or put back)
	// every prepared batch.
	workOpen := true
	closeWork := func() {
		if !workOpen {
			return
		}
		workOpen = false
		close(work)
		if err := <-fin; err != nil && !errors.Is(err, errSessionDone) {
			f.p.log.Warn("peer session: finishing batches", "err", err)
		}
	}
	defer closeWork()
	// Once this side refuses a batch (or its finisher fails) it takes no
	// more batches, but the session ends only when the batches already
	// answered have their confirmations (or the link, party 0's close or
	// the confirmation deadline ends it sooner): party 0 delivers a batch
	// whose reply it read before the refusal and confirms it, and leaving
	// before that confirmation arrives would fail spent here what party
	// 0's application already holds. end reports whether the session can
	// end now.
	ending := false
	end := func() bool {
		ending = true
		closeWork()
		return !f.p.holding()
	}
	// A held batch whose confirmation does not come within PeerTimeout
	// ends the session; the next handshake settles it (settleHeld).
	timeout := f.p.cfg.PeerTimeout
	tick := time.NewTicker(max(timeout/20, 5*time.Millisecond))
	defer tick.Stop()
	for {
		var r recvd
		select {
		case r = <-f.in:
		case <-tick.C:
			seq, late := f.p.heldOverdue(timeout)
			if !late {
				continue
			}
			select {
			case r = <-f.in: // a message already read goes first
			default:
				return fmt.Errorf("%w: no confirmation of batch %d from the peer within %v", errDesync, seq, timeout)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
		m, err := r.m, r.err
		if err != nil {
			return err
		}
		switch v := m.M.(type) {
		case *pb.PeerMsg_Confirm:
			if err := f.confirm(v.Confirm); err != nil {
				return err
			}
			if ending && !f.p.holding() {
				return nil
			}
		case *pb.PeerMsg_VoidNotice:
			f.p.peerVoid(v.VoidNotice.Ids, v.VoidNotice.Apps)
		case *pb.PeerMsg_Batch:
			if ending {
				continue // not taken: party 0 puts it back when the session ends
			}
			select {
			case <-stop: // the finisher failed
				if end() {
					return nil
				}
				continue
			default:
			}
			f.p.pend.sawBatch(v.Batch.Queued)
			f.p.peerVoid(v.Batch.VoidIds, v.Batch.VoidApps)
			pr := f.prepare(ctx, v.Batch)
			work <- pr
			if pr.rep != nil && !pr.soft {
				// Refused: the finisher sends the refusal and stops.
				if end() {
					return nil
				}
			}
		default:
			return fmt.Errorf("%w: unexpected message", errDesync)
		}
	}
}

// confirm settles the oldest held batch on party 0's confirmation:
// delivered, or failed (tampered or spent) and the session ends.
func (f *follower) confirm(c *pb.Confirm) error {
	p := f.p
	f.confirmedReply(c.Seq)
	p.heldMu.Lock()
	var h *heldBatch
	if len(p.held) > 0 && p.held[0].seq == c.Seq {
		h = p.held[0]
		p.held = p.held[1:]
	}
	p.heldMu.Unlock()
	if h == nil {
		return fmt.Errorf("%w: confirmation for an unknown batch", errDesync)
	}
	if !c.Ok {
		wipeJobReplies(h.jobs, h.replies)
		class := ErrClassTampered // also a party 0 that predates error_class
		if c.ErrorClass == ErrClassSpent {
			class = ErrClassSpent
		}
		why := fmt.Sprintf("party 0 refused batch %d: the two modules' frames or keys disagreed", h.seq)
		if class == ErrClassTampered {
			p.mismatch(h.seq, h.first, batchLast(h.first, h.jobs), h.jobs)
		} else {
			why = fmt.Sprintf("party 0 could not finish batch %d", h.seq)
		}
		p.back(h.jobs, class, why)
		return fmt.Errorf("%w: party 0 refused batch %d", errDesync, h.seq)
	}
	if !h.confirmed(c.Mac) {
		// Party 0 confirmed outputs its module did not make with ours:
		// nothing of the batch is delivered (confirm.go).
		wipeJobReplies(h.jobs, h.replies)
		p.m.rejects.WithLabelValues(ErrClassTampered).Inc()
		p.mismatch(h.seq, h.first, batchLast(h.first, h.jobs), h.jobs)
		p.back(h.jobs, ErrClassTampered, fmt.Sprintf("party 0 confirmed batch %d without the confirmation of this site's outputs: the two modules' outputs disagree", h.seq))
		return fmt.Errorf("%w: party 0's confirmation of batch %d does not match this module's pair tags", errDesync, h.seq)
	}
	p.deliverHeld(h)
	return nil
}

// errSessionDone: the finisher sent a refusal and the session ends.
var errSessionDone = errors.New("service: batch refused; session ends")

// prepared is a batch party 1 has checked, claimed and submitted (its
// frames are ready), or refused (rep set).
type prepared struct {
	b      *pb.Batch
	rep    *pb.BatchReply // refusal, sent as is; the session ends
	js     []*job
	segs   []segment       // its module requests (bulk.go)
	frames socket.Frames   // party 0's frames
	own    socket.Frames   // this module's frames
	res    []socket.Result // the finishing calls' results (without early frames)
	// soft: rep refuses this batch only (skip); the module's filler
	// outputs through last are abandoned when it is answered.
	soft bool
	last uint64
}

// prepare checks a batch against the session, claims its requests and
// submits them to the module (with party 0's frames and the collect too
// when not early). On success it advances the session state, as the
// batch will be answered before any later one.
func (f *follower) prepare(ctx context.Context, b *pb.Batch) *prepared {
	p := f.p
	pr := &prepared{b: b}
	fail := func(class, format string, args ...any) *prepared {
		rep := &pb.BatchReply{Seq: b.Seq, Error: fmt.Sprintf(format, args...), ErrorClass: class}
		if pr.js != nil {
			// Opened (one-shot replies) and refused: name the spent ones.
			if ids := spentIDs(pr.js); len(ids) > 0 {
				rep.ErrorClass, rep.Missing = ErrClassSpent, ids
			}
			p.back(pr.js, ErrClassSpent, rep.Error)
		}
		p.log.Warn("batch refused", "seq", b.Seq, "class", rep.ErrorClass, "reason", rep.Error)
		return &prepared{b: b, rep: rep}
	}
	tier := msg.Tier(b.Tier)
	if b.Seq <= f.lastSeq {
		return fail(ErrClassDesync, "batch %d is a repeat (last %d)", b.Seq, f.lastSeq)
	}
	items := b.Items
	if b.PackedItems != nil {
		if len(b.Items) > 0 {
			return fail(ErrClassDesync, "batch %d has both items and packed items", b.Seq)
		}
		var err error
		if items, err = unpackItems(b.PackedItems); err != nil {
			return fail(ErrClassDesync, "batch %d: %v", b.Seq, err)
		}
	}
	if len(b.App) > MaxAppName {
		return fail(ErrClassDesync, "batch %d: application name of %d bytes (at most %d)", b.Seq, len(b.App), MaxAppName)
	}
	t := chain(withApp(f.transcript, b.App), b.Seq, tier, b.FirstCounter, items, b.PackedItems != nil)
	if !bytes.Equal(t, b.Transcript) {
		return fail(ErrClassDesync, "batch %d: transcript hash differs (a batch was lost, repeated, reordered or altered)", b.Seq)
	}
	// The split into module requests (bulk.go): party 0's, checked
	// against the one derived here from the items.
	var runs []uint32
	if len(b.Runs) > 0 {
		runs = bulkRuns(items)
		if !equalRuns(runs, b.Runs) {
			return fail(ErrClassDesync, "batch %d: its split into runs differs from the one its items give", b.Seq)
		}
	}
	if b.FirstCounter != f.expected {
		return fail(ErrClassDesync, "batch %d starts at counter %d, this module is at %d", b.Seq, b.FirstCounter, f.expected)
	}
	// One id twice in a batch would claim one request twice and answer
	// it twice (a double close): refuse the batch and fail the id at both
	// sites, since ids must be unique among a site's pending requests.
	if dup := duplicateIDs(items); len(dup) > 0 {
		p.pend.fail(b.App, dup, ErrClassBadRequest, "id: request ids %v appear more than once in one batch", dup)
		r := fail(ErrClassBadRequest, "request ids %v appear more than once in one batch", dup)
		r.rep.Missing = dup
		return r
	}
	// Only requests of the batch's application are claimed: ids are
	// scoped by it (a batch naming another application finds none here).
	js, missing, differ := p.pend.claim(ctx, b.App, items, tier, time.Now().Add(p.claimGrace()))
	if len(differ) > 0 {
		p.pend.fail(b.App, differ, ErrClassMismatch, "request differs between the two sites (mode, profile, type, widths, count, tier, payload or correlation shape)")
		r := fail(ErrClassMismatch, "requests %v differ between the two sites", differ)
		r.rep.Missing = differ
		return r
	}
	if len(missing) > 0 && ctx.Err() == nil {
		return f.skip(ctx, b, t, items, missing)
	}
	if len(missing) > 0 {
		r := fail(ErrClassPeer, "party 1 has no request with ids %v", missing)
		r.rep.Missing = missing
		return r
	}
	pr.js = js
	for _, j := range js {
		j.run, j.seq = f.run, b.Seq
	}
	pr.segs = segmentsOf(js, runs)
	calls, wipe := submitCalls(nil, js, pr.segs, tier)
	nsub := len(calls)
	pr.frames = socket.Frames{Data: b.FrameData, Lens: b.FrameLens}
	if !f.early {
		calls = finishCalls(calls, pr.frames, js, pr.segs, b.FirstCounter)
	}
	res, err := p.mod.Do(ctx, calls, true)
	wipe()
	var first uint64
	var count int
	if err == nil {
		first, count, pr.own, err = submitted(res[:nsub], pr.segs)
		if err != nil {
			wipeResults(res[nsub:])
		}
	}
	if !f.early && pr.frames.Count() > 0 {
		// The frames call ran unless a submission failed (stop on error).
		ran := res == nil
		if res != nil {
			ran = true
			for _, r := range res[:nsub] {
				ran = ran && r.Err == nil
			}
		}
		switch {
		case ran && err == nil:
			markOpenedSegs(js, pr.segs, tier, framesOpened(res[nsub]))
		case ran:
			markOpenedSegs(js, pr.segs, tier, -1) // whether it opened them is unknown
		}
	}
	if err != nil {
		if res != nil {
			pr.js = failRefusedCorrs(res[:nsub], pr.segs, pr.js)
		}
		return fail(ErrClassDesync, "module: %v", err)
	}
	if first != b.FirstCounter {
		wipeResults(res[nsub:])
		return fail(ErrClassDesync, "module assigned counter %d, party 0 %d", first, b.FirstCounter)
	}
	pr.res = res[nsub:]
	f.transcript = t
	f.expected += uint64(count)
	f.lastSeq = b.Seq
	return pr
}

// skip refuses a batch some of whose ids have no request here (yet)
// without ending the session: no job is claimed and no frame of party 0
// is opened; the module moves past the batch's counters by generating as
// many derived keys (no frame, α drawn by the modules: nothing of any
// request's α is involved), which the finisher abandons in turn. Both
// modules are then at the same counter and the session goes on; party 0
// batches the other requests again and retries the missing ids. t is the
// transcript through b.
func (f *follower) skip(ctx context.Context, b *pb.Batch, t []byte, items []*pb.BatchItem, missing []uint64) *prepared {
	p := f.p
	p.pend.noteUnmatched(b.App, missing, p.cfg.MatchTimeout)
	n := 0
	for _, it := range items {
		n += int(max(it.GetCount(), 1))
	}
	why := fmt.Sprintf("party 1 has no request with ids %v (yet)", missing)
	err := f.fill(ctx, b.FirstCounter, n)
	if err != nil {
		// The module may be anywhere: end the session, the resync mends it.
		rep := &pb.BatchReply{Seq: b.Seq, Error: fmt.Sprintf("%s; moving the module past batch %d: %v", why, b.Seq, err),
			ErrorClass: ErrClassPeer, Missing: missing}
		p.log.Warn("batch refused", "seq", b.Seq, "class", rep.ErrorClass, "reason", rep.Error)
		return &prepared{b: b, rep: rep}
	}
	f.transcript = t
	f.expected += uint64(n)
	f.lastSeq = b.Seq
	p.log.Debug("batch skipped: unmatched ids", "seq", b.Seq, "missing", len(missing))
	return &prepared{b: b, soft: true, last: b.FirstCounter + uint64(n) - 1,
		rep: &pb.BatchReply{Seq: b.Seq, Error: why, ErrorClass: ErrClassUnmatched, Missing: missing, SessionContinues: true}}
}

// fill moves the module past the n counters from first by generating
// derived filler keys (no frame, α drawn by the modules), in requests of
// at most msg.MaxShares: a batch's counters (a large correlation's
// blocks) can outnumber what one submission takes. Every request's
// counters must follow the last's, from first on.
func (f *follower) fill(ctx context.Context, first uint64, n int) error {
	filler := make([]msg.Share, min(n, msg.MaxShares))
	for i := range filler {
		filler[i] = msg.Share{Mode: msg.Derived, Type: fss.DPF, InBits: 1, OutBits: 1, DeriveBeta: true}
	}
	for next, left := first, n; left > 0; {
		k := min(left, msg.MaxShares)
		sub, err := f.p.mod.Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC, Shares: filler[:k]})
		if err != nil {
			return err
		}
		if sub.FirstCounter != next || sub.Count != k {
			return fmt.Errorf("module assigned counters %d+%d, party 0 %d+%d", sub.FirstCounter, sub.Count, next, k)
		}
		next += uint64(k)
		left -= k
	}
	return nil
}

// finisher answers the prepared batches in order until work closes or
// one fails; the prepared batches it does not answer go back to the
// pending set.
func (f *follower) finisher(ctx context.Context, work <-chan *prepared, stop chan<- struct{}) error {
	p := f.p
	var err error
	defer func() {
		if err == nil {
			close(stop)
		}
	}()
	for pr := range work {
		if err != nil {
			if pr.js != nil {
				p.back(pr.js, ErrClassSpent, "the peer session ended before the batch was answered")
			}
			continue
		}
		var sent uint64 // frame bytes sent for this batch
		reply := func(r *pb.BatchReply) error {
			// Counted before the send: party 0 may finish the batch, and
			// an application read the count, before this goroutine runs
			// again.
			n := uint64(len(r.FrameData))
			p.frameBytes.Add(n)
			void := p.takeVoid()
			r.VoidIds, r.VoidApps = splitRids(void)
			// A failed send ends the session, which sends them again.
			f.coverReply(r.Seq, p.voidsSent(void))
			err := f.send(&pb.PeerMsg{M: &pb.PeerMsg_BatchReply{BatchReply: r}})
			if err != nil {
				p.frameBytes.Add(^(n - 1)) // not sent after all
				return err
			}
			sent += n
			return nil
		}
		rep, serr := pr.rep, error(nil)
		if pr.soft {
			// Earlier batches are answered (their outputs collected):
			// the filler outputs can go.
			if _, aerr := p.mod.Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: pr.last}); aerr != nil {
				p.log.Warn("abandoning a skipped batch's counters", "seq", pr.b.Seq, "err", aerr)
			}
		}
		if rep == nil {
			rep, serr = f.finish(ctx, pr, reply)
		}
		if serr == nil {
			serr = reply(rep)
		}
		if rep != nil && rep.Error == "" {
			p.rounds.Add(1)
			p.m.rounds.Inc()
		} else if rep != nil {
			p.m.rejects.WithLabelValues(rep.ErrorClass).Inc()
		}
		if sent > 0 {
			p.m.frameBytes.WithLabelValues(msg.Tier(pr.b.Tier).String()).Add(float64(sent))
		}
		switch {
		case serr != nil:
			err = serr
		case rep.Error != "" && !pr.soft:
			err = errSessionDone
		}
		if err != nil {
			close(stop)
		}
	}
	return err
}

// finish completes a prepared batch: early, it sends party 1's frames
// first, then has the module open party 0's frames and collects; it holds
// the outputs for party 0's confirmation and returns the reply carrying
// the digest (the whole reply without early), or a refusal. err is a
// failure to send the early part.
func (f *follower) finish(ctx context.Context, pr *prepared, send func(*pb.BatchReply) error) (*pb.BatchReply, error) {
	p := f.p
	b, js, tier := pr.b, pr.js, msg.Tier(pr.b.Tier)
	rep := &pb.BatchReply{Seq: b.Seq}
	// fail refuses the batch; the spent jobs fail with class (tampered or
	// spent) and are named in the refusal, so that party 0 fails them too.
	fail := func(class, format string, args ...any) *pb.BatchReply {
		rep.Error, rep.ErrorClass = fmt.Sprintf(format, args...), ErrClassDesync
		if ids := spentIDs(js); len(ids) > 0 {
			rep.ErrorClass, rep.Missing = class, ids
		}
		p.log.Warn("batch refused", "seq", b.Seq, "class", rep.ErrorClass, "reason", rep.Error)
		p.back(js, class, rep.Error)
		return rep
	}
	packed := pr.own
	res := pr.res
	if f.early {
		if err := send(&pb.BatchReply{Seq: b.Seq, FirstCounter: b.FirstCounter, FrameData: packed.Data, FrameLens: packed.Lens,
			DigestFollows: true}); err != nil {
			p.back(js, ErrClassSpent, "the peer session ended before the batch was answered") // nothing opened yet
			return nil, err
		}
		var err error
		res, err = p.doFinish(ctx, batchApp(js), finishCalls(nil, pr.frames, js, pr.segs, b.FirstCounter))
		if pr.frames.Count() > 0 {
			if err != nil {
				markOpenedSegs(js, pr.segs, tier, -1) // whether it opened them is unknown
			} else {
				markOpenedSegs(js, pr.segs, tier, framesOpened(res[0]))
			}
		}
		if err != nil {
			return fail(ErrClassSpent, "module: %v", err), nil
		}
	}
	class := ErrClassSpent
	if pr.frames.Count() > 0 && res[0].Err == nil && res[0].Frames != nil && res[0].Frames.Accepted != pr.frames.Count() {
		class = ErrClassTampered // a frame of party 0 was refused
	}
	reps, digest, conf, err := outputs(res, pr.frames, js, pr.segs, b.FirstCounter)
	if err != nil {
		return fail(class, "%v", err), nil
	}
	// Recorded before the reply lets party 0 deliver (recover.go).
	if p.ledger.durable() && !p.ledger.put(servedOf(js, reps)) {
		// Going down (the state file is closed): no reply without the
		// record; what the module opened is left to the next process.
		wipeJobReplies(js, reps)
		p.back(js, ErrClassSpent, "the party stopped before the batch was answered")
		return nil, errLedgerClosed
	}
	p.heldMu.Lock()
	p.heldRun = f.run
	p.held = append(p.held, &heldBatch{seq: b.Seq, first: b.FirstCounter, jobs: js, replies: reps, confirm: conf, at: time.Now()})
	p.heldMu.Unlock()
	p.m.pending.Set(float64(p.pend.size()))
	rep.Digest = digest
	if !f.early {
		rep.FirstCounter, rep.FrameData, rep.FrameLens = b.FirstCounter, packed.Data, packed.Lens
	}
	return rep, nil
}
