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

// errDesync ends a session; the next one resynchronises.
var errDesync = errors.New("service: desynchronised with the peer")

// flight is a batch party 0 has sent and not yet delivered.
type flight struct {
	seq   uint64
	jobs  []*job
	segs  []segment
	first uint64
	tier  msg.Tier
	sent  time.Time
}

func frameBytes(f socket.Frames) uint64 { return uint64(len(f.Data)) }

// session runs one party-0 session: handshake with the rollback witness,
// then the batch pipeline, until anything goes wrong.
func (p *Party) session(ctx context.Context) (err error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := p.peer.Session(sctx)
	if err != nil {
		return fmt.Errorf("peer: %w", err)
	}
	chal, err := p.mod.Challenge(sctx)
	if err != nil {
		return fmt.Errorf("module: %w", err)
	}
	spent, refs, _ := p.takeSpent(p.run)
	if err := stream.Send(&pb.PeerMsg{M: &pb.PeerMsg_Hello{Hello: &pb.Hello{Run: p.run, DeliveredThrough: p.delivered.Load(), Challenge: chal,
		EarlyFrames: !p.cfg.oneShotReplies, Spent: spent}}}); err != nil {
		p.restoreSpent(refs)
		return fmt.Errorf("peer: %w", err)
	}
	m, err := stream.Recv()
	if err != nil {
		return fmt.Errorf("peer: %w", err)
	}
	hr := m.GetHelloReply()
	if hr == nil {
		return fmt.Errorf("%w: expected a hello reply", errDesync)
	}
	// Requests party 1 burned (its module opened our frames for them and
	// the batch was not delivered) are not batched again.
	if n := p.q.failSpent(peerSpent(hr.Spent, p.run)); n > 0 {
		p.m.rejects.WithLabelValues(ErrClassSpent).Add(float64(n))
	}
	rc, err := p.mod.Reconcile(sctx, hr.Witness)
	if err != nil {
		p.m.rejects.WithLabelValues("witness").Inc()
		return fmt.Errorf("module: reconciling the peer's witness: %w", err)
	}
	w, err := p.mod.Witness(sctx, hr.Challenge)
	if err != nil {
		return fmt.Errorf("module: %w", err)
	}
	wm := &pb.Witness{Witness: w}
	if len(hr.Recent) > 0 {
		// This party restarted (recover.go): complete or void what party
		// 1 holds, and keep what it delivered for resends.
		var recs []*recoverRec
		wm.HeldOk, wm.HeldVoid, recs = p.settleHeldRemote(hr.Recent)
		p.keepRecovered(recs)
	}
	doubt := p.settleDoubt(hr.Fresh)
	if hr.Fresh {
		// Party 1 restarted: what this site delivered, and what it failed
		// spent since, for its application's resends.
		wm.Recent = append(p.recentItems(), tombstones(doubt, ErrClassSpent)...)
	}
	if err := stream.Send(&pb.PeerMsg{M: &pb.PeerMsg_Witness{Witness: wm}}); err != nil {
		return fmt.Errorf("peer: %w", err)
	}
	if m, err = stream.Recv(); err != nil {
		return fmt.Errorf("peer: %w", err)
	}
	if sd := m.GetSyncDone(); sd == nil || sd.NextCounter != rc.Next {
		return fmt.Errorf("%w: the modules did not agree on a counter after the witness exchange", errDesync)
	}
	p.noteSync(rc.Next, rc.RolledBack)
	p.peerUp.Store(true)
	defer p.peerUp.Store(false)
	transcript := newTranscript(chal, hr.Challenge)

	var (
		mu      sync.Mutex
		flights []*flight
		sendMu  sync.Mutex
		wg      sync.WaitGroup
	)
	slots := make(chan struct{}, p.cfg.InFlight)
	errc := make(chan error, 3)
	send := func(m *pb.PeerMsg) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(m)
	}
	wg.Add(3)
	go func() { // sender
		defer wg.Done()
		next := rc.Next
		for {
			select {
			case slots <- struct{}{}:
			case <-sctx.Done():
				return
			}
			jobs, tier, err := p.q.take(sctx, p.cfg.Batch)
			if err != nil {
				return
			}
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
			if hr.Bulk && !p.cfg.noBulk {
				runs = bulkRuns(items)
			}
			segs := segmentsOf(jobs, runs)
			calls, wipe := submitCalls(nil, jobs, segs, tier)
			var first uint64
			var count int
			var packed socket.Frames
			res, err := p.mod.Do(sctx, calls, true)
			wipe()
			if err == nil {
				first, count, packed, err = submitted(res, segs)
			}
			if err == nil && first != next {
				err = fmt.Errorf("%w: module assigned counter %d, expected %d", errDesync, first, next)
			}
			if err != nil {
				jobs = failRefusedCorrs(res, segs, jobs)
				p.back(jobs, ErrClassSpent, "module refused the submission") // nothing opened: they go back
				errc <- fmt.Errorf("module: %w", err)
				return
			}
			next += uint64(count)
			p.seq++
			fl := &flight{seq: p.seq, jobs: jobs, segs: segs, first: first, tier: tier, sent: time.Now()}
			for _, j := range jobs {
				j.run, j.seq = p.run, fl.seq
			}
			var pk *pb.PackedItems
			if hr.PackedItems {
				pk = packItems(items)
			}
			transcript = chain(transcript, fl.seq, tier, fl.first, items, pk != nil)
			if pk != nil {
				items = nil
			}
			mu.Lock()
			flights = append(flights, fl)
			mu.Unlock()
			p.inFlight.Add(1)
			p.m.inFlight.Inc()
			void := p.takeVoid()
			err = send(&pb.PeerMsg{M: &pb.PeerMsg_Batch{Batch: &pb.Batch{Seq: fl.seq, Tier: uint32(tier), FirstCounter: fl.first,
				Items: items, PackedItems: pk, Transcript: transcript, FrameData: packed.Data, FrameLens: packed.Lens, Queued: uint64(queued),
				VoidIds: void, Runs: runs}}})
			if err != nil {
				p.restoreVoid(void)
				errc <- fmt.Errorf("peer: %w", err)
				return
			}
			if n := frameBytes(packed); n > 0 {
				p.frameBytes.Add(n)
				p.m.frameBytes.WithLabelValues(tier.String()).Add(float64(n))
			}
		}
	}()
	go func() { // receiver
		defer wg.Done()
		for {
			m, err := stream.Recv()
			if err != nil {
				errc <- fmt.Errorf("peer: %w", err)
				return
			}
			br := m.GetBatchReply()
			p.peerVoid(br.GetVoidIds())
			mu.Lock()
			var fl *flight
			if len(flights) > 0 {
				fl = flights[0]
			}
			mu.Unlock()
			if br == nil || fl == nil || br.Seq != fl.seq {
				errc <- fmt.Errorf("%w: unexpected message from the peer", errDesync)
				return
			}
			drop := func() {
				mu.Lock()
				flights = flights[1:]
				mu.Unlock()
				p.inFlight.Add(^uint64(0))
				p.m.inFlight.Dec()
			}
			if br.Error != "" && br.SessionContinues && br.ErrorClass == ErrClassUnmatched && len(br.FrameData) == 0 {
				// Refused for unmatched ids alone, before any frame was
				// opened; party 1's module has moved past the batch.
				drop()
				p.m.rejects.WithLabelValues(ErrClassUnmatched).Inc()
				ctx, cancel := context.WithTimeout(sctx, p.cfg.PeerTimeout)
				_, aerr := p.mod.Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: batchLast(fl.first, fl.jobs)})
				cancel()
				if aerr != nil {
					errc <- fmt.Errorf("module: abandoning skipped batch %d: %w", fl.seq, aerr)
					return
				}
				p.unmatched(fl.jobs, br.Missing)
				<-slots
				continue
			}
			if br.Error != "" {
				drop()
				p.m.rejects.WithLabelValues(peerClass(br.ErrorClass)).Inc()
				p.failBatch(fl.jobs, br)
				errc <- fmt.Errorf("%w: peer: %s", errDesync, br.Error)
				return
			}
			if br.FirstCounter != fl.first {
				errc <- fmt.Errorf("%w: peer used counter %d for batch %d, we used %d", errDesync, br.FirstCounter, fl.seq, fl.first)
				return
			}
			p.rounds.Add(1)
			p.m.rounds.Inc()
			frames := socket.Frames{Data: br.FrameData, Lens: br.FrameLens}
			calls := finishCalls(nil, frames, fl.jobs, fl.segs, fl.first)
			res, err := p.mod.Do(sctx, calls, true)
			if err != nil {
				if frames.Count() > 0 {
					markOpenedSegs(fl.jobs, fl.segs, fl.tier, -1) // whether it opened them is unknown
				}
				errc <- fmt.Errorf("module: %w", err)
				return
			}
			// From here the jobs covered by an accepted frame are spent:
			// they are delivered or failed, never batched again.
			refused := false
			if frames.Count() > 0 {
				markOpenedSegs(fl.jobs, fl.segs, fl.tier, framesOpened(res[0]))
				refused = res[0].Err == nil && res[0].Frames != nil && res[0].Frames.Accepted != frames.Count()
			}
			reps, digest, err := outputs(res, frames, fl.jobs, fl.segs, fl.first)
			if br.DigestFollows {
				// Party 1 sent its frames ahead of its keys' digest, so
				// both modules generated this batch at the same time; the
				// digest (or party 1's refusal) comes now.
				br2, rerr := recvDigest(stream, fl.seq)
				p.peerVoid(br2.GetVoidIds())
				if rerr != nil {
					wipeReplies(reps)
					errc <- rerr
					return
				}
				if br2.Error != "" {
					wipeReplies(reps)
					drop()
					p.m.rejects.WithLabelValues(peerClass(br2.ErrorClass)).Inc()
					p.failBatch(fl.jobs, br2)
					errc <- fmt.Errorf("%w: peer: %s", errDesync, br2.Error)
					return
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
				wipeReplies(reps)
				drop()
				why := fmt.Sprintf("batch %d not delivered: the two modules' frames or keys disagreed", fl.seq)
				if class == ErrClassSpent {
					why = fmt.Sprintf("batch %d not delivered: %v", fl.seq, err)
				}
				p.back(fl.jobs, class, why)
				send(&pb.PeerMsg{M: &pb.PeerMsg_Confirm{Confirm: &pb.Confirm{Seq: fl.seq, ErrorClass: class}}})
				errc <- err
				return
			}
			drop()
			p.deliver(fl.jobs, reps)
			p.batches.Add(1)
			p.m.batches.Inc()
			p.delivered.Store(fl.seq)
			<-slots
			if err := send(&pb.PeerMsg{M: &pb.PeerMsg_Confirm{Confirm: &pb.Confirm{Seq: fl.seq, Ok: true}}}); err != nil {
				errc <- fmt.Errorf("peer: %w", err)
				return
			}
		}
	}()
	go func() { // watchdog: a lost or late reply ends the session
		defer wg.Done()
		t := time.NewTicker(p.cfg.PeerTimeout / 20)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-t.C:
			}
			mu.Lock()
			late := len(flights) > 0 && time.Since(flights[0].sent) > p.cfg.PeerTimeout
			mu.Unlock()
			if late {
				errc <- fmt.Errorf("%w: no reply from the peer within %v", errDesync, p.cfg.PeerTimeout)
				return
			}
		}
	}()
	err = <-errc
	cancel()
	wg.Wait()
	var back []*job
	for _, fl := range flights {
		back = append(back, fl.jobs...)
	}
	p.inFlight.Store(0)
	p.m.inFlight.Set(0)
	// Lost with the session: the jobs this module opened frames for fail
	// spent, the others are batched again after the resync — unless party
	// 1 turns out to have restarted (settleDoubt).
	for _, j := range back {
		j.doubt = !j.spent.Load()
	}
	p.back(back, ErrClassSpent, "the peer session ended before the batch was delivered")
	return err
}

// recvDigest reads the second part of a batch reply sent with
// digest_follows: the digest of party 1's keys, or its refusal.
func recvDigest(stream pb.PeerLink_SessionClient, seq uint64) (*pb.BatchReply, error) {
	m, err := stream.Recv()
	if err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	br := m.GetBatchReply()
	if br == nil || br.Seq != seq || br.DigestFollows || len(br.FrameData) != 0 || len(br.FrameLens) != 0 {
		return nil, fmt.Errorf("%w: expected the digest of batch %d from the peer", errDesync, seq)
	}
	return br, nil
}

// wipeReplies clears the outputs of replies that will not be delivered.
func wipeReplies(reps [][]msg.CollectResponse) {
	for _, r := range reps {
		for i := range r {
			clear(r[i].Key)
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
			continue
		}
		back = append(back, j)
	}
	p.back(back, peerClass(br.ErrorClass), fmt.Sprintf("the peer refused the batch: %s", br.Error))
}

func (p *Party) noteSync(next uint64, rolledBack bool) {
	p.sessionAt.Store(time.Now().UnixNano())
	p.sessions.Add(1)
	p.resyncs.Add(1)
	p.m.resyncs.Inc()
	p.setNext(next, false)
	p.m.floor.Set(float64(next))
	if rolledBack {
		p.m.rollbacks.Inc()
		p.log.Warn("this module's state was older than its peer knew (rollback); resynchronised forward", "next", next)
	}
}

// settleHeld delivers the held batches party 0 has delivered and returns
// the others' requests to the pending set.
func (p *Party) settleHeld(run, through uint64) {
	p.heldMu.Lock()
	held := p.held
	p.held = nil
	same := p.heldRun == run
	p.heldRun = run
	p.heldMu.Unlock()
	for _, h := range held {
		if same && h.seq <= through {
			p.deliverHeld(h)
		} else {
			// Opened and never confirmed: spent (spent.go).
			wipeReplies(h.replies)
			p.back(h.jobs, ErrClassSpent, fmt.Sprintf("the peer session ended before party 0 confirmed batch %d", h.seq))
		}
	}
}

// resolveHeld settles, after a restart of party 0 (a new run), the
// batches held for its predecessor: party 0 named the requests whose pair
// it completed (ok: delivered) and those it could not (void); any other
// is failed spent as before (a party 0 that does not know the lists).
func (p *Party) resolveHeld(run uint64, ok, void []uint64) {
	p.heldMu.Lock()
	held := p.held
	p.held = nil
	p.heldRun = run
	p.heldMu.Unlock()
	okSet := make(map[uint64]bool, len(ok))
	for _, id := range ok {
		okSet[id] = true
	}
	voidSet := make(map[uint64]bool, len(void))
	for _, id := range void {
		voidSet[id] = true
	}
	for _, h := range held {
		var dj, rest []*job
		var dr [][]msg.CollectResponse
		for i, j := range h.jobs {
			switch {
			case okSet[j.id]:
				dj, dr = append(dj, j), append(dr, h.replies[i])
			case voidSet[j.id]:
				wipeReplies(h.replies[i : i+1])
				p.m.rejects.WithLabelValues(ErrClassVoid).Inc()
				j.fail(ErrClassVoid, "party 0 restarted and could not complete the pair of request %d (batch %d); any share of it at site 0 is void; α spent: choose a fresh α", j.id, h.seq)
			default:
				wipeReplies(h.replies[i : i+1])
				rest = append(rest, j)
			}
		}
		if len(dj) > 0 {
			p.deliver(dj, dr)
			for _, r := range dr {
				p.recoveredKeys.Add(uint64(len(r)))
				p.m.recovered.Add(float64(len(r)))
			}
		}
		p.back(rest, ErrClassSpent, fmt.Sprintf("the peer session ended before party 0 confirmed batch %d", h.seq))
	}
}

func (p *Party) deliverHeld(h *heldBatch) {
	p.deliver(h.jobs, h.replies)
	p.batches.Add(1)
	p.m.batches.Inc()
}

// serveSession is party 1's side of a session.
func (p *Party) serveSession(stream pb.PeerLink_SessionServer) error {
	sctx, cancel := context.WithCancel(stream.Context())
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
	m, err := stream.Recv()
	if err != nil {
		return err
	}
	hello := m.GetHello()
	if hello == nil {
		return fmt.Errorf("%w: expected hello", errDesync)
	}
	if n := p.pend.failSpent(peerSpent(hello.Spent, hello.Run)); n > 0 {
		p.m.rejects.WithLabelValues(ErrClassSpent).Add(float64(n))
	}
	// fresh: this party has had no session since it started (recover.go).
	fresh := p.sessions.Load() == 0
	if fresh {
		var recs []*recoverRec
		for _, r := range peerSpent(hello.Spent, hello.Run) {
			recs = append(recs, &recoverRec{shape: shape{id: r.id}, class: ErrClassSpent})
		}
		p.keepRecovered(recs)
	}
	p.heldMu.Lock()
	newRun := p.heldRun != hello.Run
	doubt := p.held
	p.heldMu.Unlock()
	var recent []*pb.RecentItem
	if newRun {
		// Party 0 restarted (or this is the first session): what it
		// delivered of the held batches is settled at its witness.
		recent = append(p.recentItems(), heldItems(doubt)...)
	} else {
		p.settleHeld(hello.Run, hello.DeliveredThrough)
	}
	chal, err := p.mod.Challenge(sctx)
	if err != nil {
		return err
	}
	w, err := p.mod.Witness(sctx, hello.Challenge)
	if err != nil {
		return err
	}
	spent, refs, stale := p.takeSpent(hello.Run)
	if newRun && len(stale) > 0 {
		// Requests of party 0's previous run that this site failed spent:
		// a restarted party 0 answers their resends alike.
		ids := make([]uint64, len(stale))
		for i, r := range stale {
			ids[i] = r.id
		}
		recent = append(recent, tombstones(ids, ErrClassSpent)...)
	}
	if err := stream.Send(&pb.PeerMsg{M: &pb.PeerMsg_HelloReply{HelloReply: &pb.HelloReply{Challenge: chal, Witness: w,
		PackedItems: !p.cfg.itemsUnpacked, Bulk: !p.cfg.noBulk, Spent: spent, Fresh: fresh, Recent: recent}}}); err != nil {
		p.restoreSpent(refs)
		return err
	}
	if m, err = stream.Recv(); err != nil {
		return err
	}
	pw := m.GetWitness()
	if pw == nil {
		return fmt.Errorf("%w: expected the peer's witness", errDesync)
	}
	if newRun {
		p.resolveHeld(hello.Run, pw.HeldOk, pw.HeldVoid)
	}
	if fresh && len(pw.Recent) > 0 {
		p.keepRecovered(recsOf(pw.Recent))
	}
	rc, err := p.mod.Reconcile(sctx, pw.Witness)
	if err != nil {
		p.m.rejects.WithLabelValues("witness").Inc()
		return err
	}
	if err := stream.Send(&pb.PeerMsg{M: &pb.PeerMsg_SyncDone{SyncDone: &pb.SyncDone{NextCounter: rc.Next}}}); err != nil {
		return err
	}
	p.noteSync(rc.Next, rc.RolledBack)
	p.peerUp.Store(true)
	defer p.peerUp.Store(false)
	transcript := newTranscript(hello.Challenge, chal)
	expected := rc.Next
	lastSeq := hello.DeliveredThrough
	run := hello.Run
	// Batches go through two stages: this loop checks, claims and submits
	// batch k+1 (its frames ready in the module) while the finisher has
	// the module open party 0's frames of batch k, so that party 1's frames
	// of k+1 leave as soon as the digest of k has. The finisher sends every
	// batch reply, in order.
	work := make(chan *prepared, 1)
	fin := make(chan error, 1)
	stop := make(chan struct{}) // closed when the finisher fails
	go func() {
		fin <- p.finishBatches(sctx, stream, work, stop, run, hello.EarlyFrames)
	}()
	defer func() {
		close(work)
		err := <-fin
		if err != nil && !errors.Is(err, errSessionDone) {
			p.log.Warn("peer session: finishing batches", "err", err)
		}
	}()
	for {
		m, err := stream.Recv()
		if err != nil {
			return err
		}
		switch v := m.M.(type) {
		case *pb.PeerMsg_Confirm:
			p.heldMu.Lock()
			var h *heldBatch
			if len(p.held) > 0 && p.held[0].seq == v.Confirm.Seq {
				h = p.held[0]
				p.held = p.held[1:]
			}
			p.heldMu.Unlock()
			if h == nil {
				return fmt.Errorf("%w: confirmation for an unknown batch", errDesync)
			}
			if !v.Confirm.Ok {
				wipeReplies(h.replies)
				class := ErrClassTampered // also a party 0 that predates error_class
				if v.Confirm.ErrorClass == ErrClassSpent {
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
			p.deliverHeld(h)
		case *pb.PeerMsg_Batch:
			select {
			case <-stop:
				return nil // the finisher failed; the session ends
			default:
			}
			p.pend.sawBatch(v.Batch.Queued)
			p.peerVoid(v.Batch.VoidIds)
			pr := p.prepareBatch(sctx, v.Batch, &transcript, &expected, &lastSeq, run, hello.EarlyFrames)
			work <- pr
			if pr.rep != nil && !pr.soft {
				return nil // refused: the finisher sends the refusal and stops
			}
		default:
			return fmt.Errorf("%w: unexpected message", errDesync)
		}
	}
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
	// soft: rep refuses this batch only (skipBatch); the module's filler
	// outputs through last are abandoned when it is answered.
	soft bool
	last uint64
}

// prepareBatch checks a batch against the session, claims its requests
// and submits them to the module (with party 0's frames and the collect
// too when not early). On success it advances the session state, as the
// batch will be answered before any later one.
func (p *Party) prepareBatch(ctx context.Context, b *pb.Batch, transcript *[]byte, expected, lastSeq *uint64, run uint64, early bool) *prepared {
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
	if b.Seq <= *lastSeq {
		return fail(ErrClassDesync, "batch %d is a repeat (last %d)", b.Seq, *lastSeq)
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
	t := chain(*transcript, b.Seq, tier, b.FirstCounter, items, b.PackedItems != nil)
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
	if b.FirstCounter != *expected {
		return fail(ErrClassDesync, "batch %d starts at counter %d, this module is at %d", b.Seq, b.FirstCounter, *expected)
	}
	// One id twice in a batch would claim one request twice and answer
	// it twice (a double close): refuse the batch and fail the id at both
	// sites, since ids must be unique among a site's pending requests.
	if dup := duplicateIDs(items); len(dup) > 0 {
		p.pend.fail(dup, ErrClassBadRequest, "id: request ids %v appear more than once in one batch", dup)
		r := fail(ErrClassBadRequest, "request ids %v appear more than once in one batch", dup)
		r.rep.Missing = dup
		return r
	}
	js, missing, differ := p.pend.claim(ctx, items, tier, time.Now().Add(p.claimGrace()))
	if len(differ) > 0 {
		p.pend.fail(differ, ErrClassMismatch, "request differs between the two sites (mode, type, widths, count or tier)")
		r := fail(ErrClassMismatch, "requests %v differ between the two sites", differ)
		r.rep.Missing = differ
		return r
	}
	if len(missing) > 0 && ctx.Err() == nil {
		return p.skipBatch(ctx, b, t, items, missing, transcript, expected, lastSeq)
	}
	if len(missing) > 0 {
		r := fail(ErrClassPeer, "party 1 has no request with ids %v", missing)
		r.rep.Missing = missing
		return r
	}
	pr.js = js
	for _, j := range js {
		j.run, j.seq = run, b.Seq
	}
	pr.segs = segmentsOf(js, runs)
	calls, wipe := submitCalls(nil, js, pr.segs, tier)
	nsub := len(calls)
	pr.frames = socket.Frames{Data: b.FrameData, Lens: b.FrameLens}
	if !early {
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
	if !early && pr.frames.Count() > 0 {
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
	*transcript = t
	*expected += uint64(count)
	*lastSeq = b.Seq
	return pr
}

// claimGrace is how long party 1 waits, within one batch, for a request
// party 0 batched and that has not reached party 1 yet: the batch, and
// every batch after it, waits that long. Past it the batch is refused for
// those ids alone (skipBatch) and party 0 retries them by themselves until
// MatchTimeout, so a stray id costs the others at most this once.
func (p *Party) claimGrace() time.Duration { return min(p.cfg.MatchTimeout, maxClaimGrace) }

// maxClaimGrace bounds claimGrace: the usual skew between two sites'
// copies of one request is well under it.
const maxClaimGrace = 100 * time.Millisecond

// skipBatch refuses a batch some of whose ids have no request here (yet)
// without ending the session: no job is claimed and no frame of party 0
// is opened; the module moves past the batch's counters by generating as
// many derived keys (no frame, α drawn by the modules: nothing of any
// request's α is involved), which the finisher abandons in turn. Both
// modules are then at the same counter and the session goes on; party 0
// batches the other requests again and retries the missing ids.
func (p *Party) skipBatch(ctx context.Context, b *pb.Batch, t []byte, items []*pb.BatchItem, missing []uint64,
	transcript *[]byte, expected, lastSeq *uint64) *prepared {
	p.pend.noteUnmatched(missing, p.cfg.MatchTimeout)
	n := 0
	for _, it := range items {
		n += int(max(it.GetCount(), 1))
	}
	filler := make([]msg.Share, n)
	for i := range filler {
		filler[i] = msg.Share{Mode: msg.Derived, Type: fss.DPF, InBits: 1, OutBits: 1, DeriveBeta: true}
	}
	why := fmt.Sprintf("party 1 has no request with ids %v (yet)", missing)
	sub, err := p.mod.Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC, Shares: filler})
	if err == nil && (sub.FirstCounter != b.FirstCounter || sub.Count != n) {
		err = fmt.Errorf("module assigned counters %d+%d, party 0 %d+%d", sub.FirstCounter, sub.Count, b.FirstCounter, n)
	}
	if err != nil {
		// The module may be anywhere: end the session, the resync mends it.
		rep := &pb.BatchReply{Seq: b.Seq, Error: fmt.Sprintf("%s; moving the module past batch %d: %v", why, b.Seq, err),
			ErrorClass: ErrClassPeer, Missing: missing}
		p.log.Warn("batch refused", "seq", b.Seq, "class", rep.ErrorClass, "reason", rep.Error)
		return &prepared{b: b, rep: rep}
	}
	*transcript = t
	*expected += uint64(n)
	*lastSeq = b.Seq
	p.log.Debug("batch skipped: unmatched ids", "seq", b.Seq, "missing", len(missing))
	return &prepared{b: b, soft: true, last: b.FirstCounter + uint64(n) - 1,
		rep: &pb.BatchReply{Seq: b.Seq, Error: why, ErrorClass: ErrClassUnmatched, Missing: missing, SessionContinues: true}}
}

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

// finishBatches answers the prepared batches in order until work closes
// or one fails; the prepared batches it does not answer go back to the
// pending set.
func (p *Party) finishBatches(ctx context.Context, stream pb.PeerLink_SessionServer, work <-chan *prepared, stop chan<- struct{},
	run uint64, early bool) error {
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
			sent += uint64(len(r.FrameData))
			r.VoidIds = p.takeVoid()
			err := stream.Send(&pb.PeerMsg{M: &pb.PeerMsg_BatchReply{BatchReply: r}})
			if err != nil {
				p.restoreVoid(r.VoidIds)
			}
			return err
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
			rep, serr = p.finishBatch(ctx, pr, run, early, reply)
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
			p.frameBytes.Add(sent)
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

// finishBatch completes a prepared batch: with early, it sends party 1's
// frames first, then has the module open party 0's frames and collects;
// it holds the outputs for party 0's confirmation and returns the reply
// carrying the digest (the whole reply without early), or a refusal. err
// is a failure to send the early part.
func (p *Party) finishBatch(ctx context.Context, pr *prepared, run uint64, early bool, send func(*pb.BatchReply) error) (*pb.BatchReply, error) {
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
	if early {
		if err := send(&pb.BatchReply{Seq: b.Seq, FirstCounter: b.FirstCounter, FrameData: packed.Data, FrameLens: packed.Lens,
			DigestFollows: true}); err != nil {
			p.back(js, ErrClassSpent, "the peer session ended before the batch was answered") // nothing opened yet
			return nil, err
		}
		var err error
		res, err = p.mod.Do(ctx, finishCalls(nil, pr.frames, js, pr.segs, b.FirstCounter), true)
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
	reps, digest, err := outputs(res, pr.frames, js, pr.segs, b.FirstCounter)
	if err != nil {
		return fail(class, "%v", err), nil
	}
	p.heldMu.Lock()
	p.heldRun = run
	p.held = append(p.held, &heldBatch{seq: b.Seq, first: b.FirstCounter, jobs: js, replies: reps})
	p.heldMu.Unlock()
	p.m.pending.Set(float64(p.pend.size()))
	rep.Digest = digest
	if !early {
		rep.FirstCounter, rep.FrameData, rep.FrameLens = b.FirstCounter, packed.Data, packed.Lens
	}
	return rep, nil
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
