package service

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Recovery after a party restart (issue 20): a pair is delivered at both
// sites or at neither across any single daemon crash.
//
// A party that crashes loses its requests and the answers it had not yet
// sent; its module keeps running and hands out the same output again for
// a recent counter (its collect is idempotent over the last 8192
// counters). Each party therefore remembers, for its last recentKeys
// keys, which request got which counters and the pair tags of its
// outputs (never the keys). At the first session after one of them
// restarted, the other sends it that list:
//
//   - party 1 restarted (HelloReply.fresh): party 0 sends the requests it
//     delivered (Witness.recent). When the application at site 1 resends
//     such an id (the Recovery table: resend every unanswered id), party 1
//     re-collects the same counters from its module and delivers them if
//     their pair tags give the digest party 0 sent; otherwise it answers
//     void. Requests party 0 failed spent are in Hello.spent, and a resend
//     of one is answered spent.
//   - party 0 restarted (a new Hello.run): party 1 sends the requests it
//     delivered and those it holds unconfirmed (HelloReply.recent, held).
//     Party 0 re-collects each held one at once: if its module had
//     collected the same counters with the same digest, the pair is
//     complete and party 1 delivers it (Witness.held_ok); otherwise party
//     1 fails it void (Witness.held_void; its module had opened party 0's
//     frames: α spent). A resend at site 0 is answered from party 0's
//     module the same way, or void.
//
// No frame is opened again on either path: the spent rule holds. A
// request resent with another shape than the one delivered is void. The
// lists are kept recoverWindow; an id resent later is a new request.

// recentKeys bounds the keys a party remembers (the module's re-collect
// window).
const recentKeys = 8192

// recoverWindow is how long a restarted party keeps what its peer sent.
const recoverWindow = time.Minute

// recentRec is one delivered request: its shape, first counter and key
// count. Its pair tags are in Party.tags, by counter.
type recentRec struct {
	shape
	first  uint64
	n      int
	notice chan<- *pb.KeyReply // the stream it was delivered on
	// slabFirst, slabN: the bulk its keys came from (0: per counter)
	slabFirst uint64
	slabN     int
}

// shape is a BatchItem's fields (a BatchItem is not copied by value).
type shape struct {
	id, beta                  uint64
	mode, typ, in, out, count uint32
	deriveBeta                bool
	// vec: a payload vector's group and public elements (appendVec's
	// bytes; empty for one element), as a string so shapes compare.
	vec string
}

func shapeOf(it *pb.BatchItem) shape {
	return shape{id: it.GetId(), beta: it.GetBeta(), mode: it.GetMode(), typ: it.GetType(), in: it.GetInBits(),
		out: it.GetOutBits(), count: it.GetCount(), deriveBeta: it.GetDeriveBeta(), vec: string(appendVec(nil, it))}
}

func (s shape) item() *pb.BatchItem {
	it := &pb.BatchItem{Id: s.id, Mode: s.mode, Type: s.typ, InBits: s.in, OutBits: s.out, Count: s.count,
		DeriveBeta: s.deriveBeta, Beta: s.beta}
	if s.vec != "" {
		it.Group, it.Betas = vecOf([]byte(s.vec))
	}
	return it
}

// vecOf reads appendVec's bytes back (this party wrote them).
func vecOf(b []byte) (group uint32, betas []uint64) {
	b = b[1:] // 'G'
	g, n := protowire.ConsumeVarint(b)
	b = b[max(n, 0):]
	k, n := protowire.ConsumeVarint(b)
	b = b[max(n, 0):]
	for range k {
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			break
		}
		betas = append(betas, v)
		b = b[n:]
	}
	return uint32(g), betas
}

// recoverRec is what a restarted party knows of one id from its peer:
// the counters and digest to re-collect, or the class to answer with.
type recoverRec struct {
	shape
	first uint64
	n     int
	// slabFirst, slabN: the bulk to re-collect whole (slabN 0: per counter)
	slabFirst uint64
	slabN     int
	digest    []byte
	class     string // non-empty: answer the id with this class
	at        time.Time
}

// record notes the delivered jobs (outputs reps) for a restarted peer.
func (p *Party) record(jobs []*job, reps [][]msg.CollectResponse) {
	p.recentMu.Lock()
	defer p.recentMu.Unlock()
	if p.recent == nil {
		p.recent = make([]recentRec, recentKeys)
		p.tags = make([][16]byte, recentKeys)
		p.tagCtr = make([]uint64, recentKeys)
	}
	for i, j := range jobs {
		// A correlation is handed out once by its module and cannot be
		// re-collected: a restarted peer finds no record and fails it.
		if len(reps[i]) == 0 && j.vn == 0 || j.corr != nil {
			continue
		}
		if j.vn > 0 {
			// A view of its slab: counters vFirst on, tags in the slab.
			p.recent[p.recentNext] = recentRec{shape: shapeOf(j.item), first: j.vFirst, n: j.vn, notice: j.notice,
				slabFirst: j.slabFirst, slabN: j.slabN}
			p.recentNext = (p.recentNext + 1) % recentKeys
			for k := range j.vn {
				c := j.vFirst + uint64(k)
				p.tags[c%recentKeys] = j.tagAt(k)
				p.tagCtr[c%recentKeys] = c
			}
			continue
		}
		p.recent[p.recentNext] = recentRec{shape: shapeOf(j.item), first: reps[i][0].Counter, n: len(reps[i]), notice: j.notice,
			slabFirst: j.slabFirst, slabN: j.slabN}
		p.recentNext = (p.recentNext + 1) % recentKeys
		for k := range reps[i] {
			c := reps[i][k].Counter
			p.tags[c%recentKeys] = reps[i][k].PairTag
			p.tagCtr[c%recentKeys] = c
		}
	}
}

// recoverDigest is the digest of a request's pair tags.
func recoverDigest(tags func(k int) ([16]byte, bool), n int) []byte {
	h := sha256.New()
	h.Write([]byte("kord/v1/recover"))
	for k := 0; k < n; k++ {
		t, ok := tags(k)
		if !ok {
			return nil
		}
		h.Write(t[:])
	}
	return h.Sum(nil)
}

func outputsDigest(outs []msg.CollectResponse) []byte {
	return recoverDigest(func(k int) ([16]byte, bool) { return outs[k].PairTag, true }, len(outs))
}

// recentItems lists the remembered deliveries whose tags are all still
// remembered, oldest first.
func (p *Party) recentItems() []*pb.RecentItem {
	p.recentMu.Lock()
	defer p.recentMu.Unlock()
	var out []*pb.RecentItem
	for i := range p.recent {
		r := &p.recent[(p.recentNext+i)%recentKeys]
		if r.n == 0 {
			continue
		}
		d := recoverDigest(func(k int) ([16]byte, bool) {
			c := r.first + uint64(k)
			return p.tags[c%recentKeys], p.tagCtr[c%recentKeys] == c
		}, r.n)
		if d == nil {
			continue
		}
		out = append(out, &pb.RecentItem{Item: r.item(), FirstCounter: r.first, Digest: d, BulkFirst: r.slabFirst, BulkN: uint32(r.slabN)})
	}
	return out
}

// heldItems lists held batches' requests as RecentItems (held set).
func heldItems(held []*heldBatch) []*pb.RecentItem {
	var out []*pb.RecentItem
	for _, h := range held {
		for i, j := range h.jobs {
			if j.vn > 0 {
				out = append(out, &pb.RecentItem{Item: shapeOf(j.item).item(), FirstCounter: j.vFirst,
					Digest: recoverDigest(func(k int) ([16]byte, bool) { return j.tagAt(k), true }, j.vn),
					Seq:    h.seq, Held: true, BulkFirst: j.slabFirst, BulkN: uint32(j.slabN)})
				continue
			}
			if len(h.replies[i]) == 0 {
				continue
			}
			out = append(out, &pb.RecentItem{Item: shapeOf(j.item).item(), FirstCounter: h.replies[i][0].Counter,
				Digest: outputsDigest(h.replies[i]), Seq: h.seq, Held: true, BulkFirst: j.slabFirst, BulkN: uint32(j.slabN)})
		}
	}
	return out
}

// keepRecovered stores what the peer sent for ids this party may be
// asked for again, and answers those already waiting (queued or pending).
func (p *Party) keepRecovered(recs []*recoverRec) {
	if len(recs) == 0 {
		return
	}
	now := time.Now()
	ids := make([]uint64, 0, len(recs))
	p.recoverMu.Lock()
	defer p.recoverMu.Unlock()
	if p.recovered == nil {
		p.recovered = map[uint64]*recoverRec{}
	}
	for id, r := range p.recovered {
		if now.Sub(r.at) > recoverWindow {
			delete(p.recovered, id)
		}
	}
	for _, r := range recs {
		r.at = now
		p.recovered[r.id] = r
		ids = append(ids, r.id)
	}
	p.recoveredN.Store(int64(len(p.recovered)))
	var waiting []*job
	if p.cfg.Party == 0 {
		set := make(map[uint64]bool, len(ids))
		for _, id := range ids {
			set[id] = true
		}
		waiting = p.q.extract(set)
	} else {
		waiting = p.pend.take(ids)
	}
	p.admitted(p.takeRecoveredLocked(waiting))
}

// takeRecoveredLocked answers, from what a restarted party's peer sent,
// the jobs it covers (in the background: module calls) and returns the
// others; recoverMu held.
func (p *Party) takeRecoveredLocked(js []*job) []*job {
	if len(js) == 0 {
		return js
	}
	var rest, mine []*job
	var recs []*recoverRec
	now := time.Now()
	for _, j := range js {
		r, ok := p.recovered[j.id]
		if ok && now.Sub(r.at) <= recoverWindow {
			delete(p.recovered, j.id)
			mine = append(mine, j)
			recs = append(recs, r)
			continue
		}
		rest = append(rest, j)
	}
	p.recoveredN.Store(int64(len(p.recovered)))
	if len(mine) > 0 {
		go p.recoverJobs(mine, recs)
	}
	return rest
}

// recoverJobs answers each job from its record: the class recorded, or
// the outputs its module hands out again at the recorded counters when
// their pair tags match the peer's digest, or void.
func (p *Party) recoverJobs(js []*job, recs []*recoverRec) {
	for i, j := range js {
		r := recs[i]
		if r.class != "" {
			p.m.rejects.WithLabelValues(r.class).Inc()
			j.fail(r.class, "request %d: its batch ended %s before a restart of a party (α spent: choose a fresh α)", j.id, r.class)
			continue
		}
		outs, err := p.recollect(j, r)
		if err != nil {
			p.addVoid(j.id) // the peer delivered its keys: it tells its application
			p.m.rejects.WithLabelValues(ErrClassVoid).Inc()
			p.log.Warn("a request resent after a party restart cannot be completed; void at both sites",
				"id", j.id, "first_counter", r.first, "keys", r.n, "err", err)
			j.fail(ErrClassVoid, "request %d: its pair was generated before a party restart and cannot be completed here (%v); any share of it delivered at the other site is void; α spent: choose a fresh α", j.id, err)
			continue
		}
		p.log.Info("request completed again after a party restart", "id", j.id, "first_counter", r.first, "keys", r.n)
		p.recoveredKeys.Add(uint64(len(outs)))
		p.m.recovered.Add(float64(len(outs)))
		p.deliver([]*job{j}, [][]msg.CollectResponse{outs})
	}
}

// recollect re-collects j's outputs at r's counters and checks them.
func (p *Party) recollect(j *job, r *recoverRec) ([]msg.CollectResponse, error) {
	if shapeOf(j.item) != r.shape {
		return nil, fmt.Errorf("the request differs from the one delivered before")
	}
	if r.n < 1 || r.n > MaxCount || len(r.digest) == 0 {
		return nil, fmt.Errorf("no counters recorded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.PeerTimeout)
	defer cancel()
	var outs []msg.CollectResponse
	if r.slabN > 0 {
		// A bulk's keys: the module re-collects the slab whole.
		var err error
		if outs, err = p.recollectSlab(ctx, r); err != nil {
			return nil, err
		}
	} else {
		cr := &socket.CollectRange{First: r.first, Count: r.n}
		if j.points != nil {
			cr.Points = make([][]uint64, r.n)
			for k := range cr.Points {
				cr.Points[k] = j.points
			}
		}
		res, err := p.mod.Do(ctx, []socket.Call{{Range: cr}}, true)
		if err == nil {
			err = res[0].Err
		}
		if err != nil {
			return nil, fmt.Errorf("module: %w", err)
		}
		outs = res[0].Range
	}
	if len(outs) != r.n {
		wipeReplies([][]msg.CollectResponse{outs})
		return nil, fmt.Errorf("module: %d outputs for %d keys", len(outs), r.n)
	}
	if d := outputsDigest(outs); string(d) != string(r.digest) {
		wipeReplies([][]msg.CollectResponse{outs})
		return nil, fmt.Errorf("the pair tags differ from the peer's")
	}
	j.keyBuf, j.keyOff, j.slabFirst, j.slabN, j.slab = nil, 0, r.slabFirst, r.slabN, nil
	j.keyRef, j.keyRegion = nil, nil // outs are views of another buffer, not pooled
	j.clearView()
	return outs, nil
}

// recollectSlab re-collects the bulk r's keys came from and returns r's
// outputs (views of the slab; the slab's other keys are wiped).
func (p *Party) recollectSlab(ctx context.Context, r *recoverRec) ([]msg.CollectResponse, error) {
	if r.first < r.slabFirst || r.first-r.slabFirst+uint64(r.n) > uint64(r.slabN) {
		return nil, fmt.Errorf("the recorded counters are outside their bulk")
	}
	res, err := p.mod.Do(ctx, []socket.Call{{Collect: &msg.CollectRequest{Counter: r.slabFirst, Count: r.slabN}}}, true)
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		return nil, fmt.Errorf("module: %w", err)
	}
	sl := res[0].Collect.Slab
	if sl == nil || sl.First != r.slabFirst || sl.N != r.slabN {
		if sl != nil {
			sl.Wipe()
		}
		return nil, fmt.Errorf("module: another slab than counters %d+%d", r.slabFirst, r.slabN)
	}
	off := int(r.first - r.slabFirst)
	outs := appendSlab(make([]msg.CollectResponse, 0, sl.N), sl)
	wipeOutputs(outs[:off])
	wipeOutputs(outs[off+r.n:])
	return outs[off : off+r.n : off+r.n], nil
}

// recsOf reads a peer's RecentItems (malformed ones are skipped).
func recsOf(items []*pb.RecentItem) []*recoverRec {
	out := make([]*recoverRec, 0, len(items))
	for _, it := range items {
		if c := it.GetErrorClass(); c != "" && it.GetItem() != nil {
			if c != ErrClassVoid {
				c = ErrClassSpent // the only other class a peer sends
			}
			out = append(out, &recoverRec{shape: shape{id: it.Item.GetId()}, class: c})
			continue
		}
		if it.GetItem() == nil || len(it.Digest) != sha256.Size {
			continue
		}
		sh := shapeOf(it.Item)
		n := int(max(sh.count, 1))
		r := &recoverRec{shape: sh, first: it.FirstCounter, n: n, digest: it.Digest}
		if bn := it.GetBulkN(); bn > 0 && bn <= msg.MaxBulk {
			r.slabFirst, r.slabN = it.GetBulkFirst(), int(bn)
		}
		out = append(out, r)
	}
	return out
}

// settleHeldRemote (party 0, after a restart) checks party 1's held
// requests against its own module: ok ids have the same outputs
// collected (the pair is complete), the others are void. It wipes what it
// re-collected; a resend re-collects again.
func (p *Party) settleHeldRemote(items []*pb.RecentItem) (ok, void []uint64, confirms [][]byte, recs []*recoverRec) {
	for _, it := range items {
		rs := recsOf([]*pb.RecentItem{it})
		if !it.Held {
			recs = append(recs, rs...)
			continue
		}
		if len(rs) == 0 {
			continue
		}
		r := rs[0]
		j := &job{id: r.id, item: r.item()}
		var conf []byte
		if r.mode == uint32(msg.Consume) {
			// The points are the application's: not known until a resend.
			r.class = ErrClassVoid
		} else if outs, err := p.recollect(j, r); err != nil || len(outs) == 0 {
			r.class = ErrClassVoid
		} else {
			conf = itemConfirm(outs[0].Counter, func(k int) [16]byte { return outs[k].PairTag }, len(outs))
			wipeReplies([][]msg.CollectResponse{outs})
		}
		if r.class == "" {
			ok, confirms = append(ok, r.id), append(confirms, conf)
		} else {
			void = append(void, r.id)
			p.log.Warn("a pair held by party 1 across this party's restart cannot be completed; void at both sites",
				"id", r.id, "first_counter", r.first, "keys", r.n)
		}
		recs = append(recs, r)
	}
	return ok, void, confirms, recs
}

// tombstones lists ids this site failed with class, for a restarted peer.
func tombstones(ids []uint64, class string) []*pb.RecentItem {
	out := make([]*pb.RecentItem, len(ids))
	for i, id := range ids {
		out[i] = &pb.RecentItem{Item: &pb.BatchItem{Id: id}, ErrorClass: class}
	}
	return out
}

// settleDoubt (party 0, at a session start) settles the queued jobs that
// were in batches lost with the previous session while party 0's module
// had not opened party 1's frames for them: party 1's module may have
// opened party 0's (its spent report comes at the hello). If party 1
// restarted (fresh), that report is lost with it: they fail spent, and
// their ids are returned for party 1 to answer a resend alike. Otherwise
// party 1's report has been applied and they are batched again.
func (p *Party) settleDoubt(fresh bool) []uint64 {
	js := p.q.takeDoubt(fresh)
	ids := make([]uint64, 0, len(js))
	for _, j := range js {
		j.fail(ErrClassSpent, "request %d: party 1 restarted while the request was in a batch sent to it, so its module may have opened this site's frame; α spent: choose a fresh α", j.id)
		// Also in the spent log: if this handshake fails before party 1
		// has the tombstones, the next hello still carries them.
		p.logSpent(j)
		ids = append(ids, j.id)
	}
	if len(js) > 0 {
		p.m.rejects.WithLabelValues(ErrClassSpent).Add(float64(len(js)))
	}
	return ids
}

// addVoid notes an id to report void to the peer.
func (p *Party) addVoid(id uint64) {
	p.voidMu.Lock()
	defer p.voidMu.Unlock()
	if len(p.voidOut) < maxSpentLog {
		p.voidOut = append(p.voidOut, id)
	}
}

// takeVoid returns and clears the ids to report void to the peer.
func (p *Party) takeVoid() []uint64 {
	p.voidMu.Lock()
	defer p.voidMu.Unlock()
	v := p.voidOut
	p.voidOut = nil
	return v
}

// restoreVoid puts back ids whose report did not go out.
func (p *Party) restoreVoid(ids []uint64) {
	if len(ids) == 0 {
		return
	}
	p.voidMu.Lock()
	defer p.voidMu.Unlock()
	p.voidOut = append(ids, p.voidOut...)
}

// peerVoid handles the peer's report that it answered ids void after its
// restart: this site delivered their keys, and the stream that got them
// (if it is still open) gets a second reply for each id, class void.
func (p *Party) peerVoid(ids []uint64) {
	if len(ids) == 0 || len(ids) > maxSpentLog {
		return
	}
	want := make(map[uint64]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	p.recentMu.Lock()
	var notes []chan<- *pb.KeyReply
	var found []uint64
	for i := range p.recent {
		r := &p.recent[i]
		if r.n > 0 && want[r.id] {
			want[r.id] = false
			notes, found = append(notes, r.notice), append(found, r.id)
		}
	}
	p.recentMu.Unlock()
	for i, id := range found {
		p.m.rejects.WithLabelValues(ErrClassVoid).Inc()
		p.log.Warn("the peer could not complete a pair after its restart: the keys delivered here for this id are void", "id", id)
		if notes[i] == nil {
			continue
		}
		select {
		case notes[i] <- &pb.KeyReply{Id: id, ErrorClass: ErrClassVoid, Error: fmt.Sprintf(
			"request %d: the other site restarted and could not complete this pair; the key share delivered here for this id is void: discard it; α spent: choose a fresh α", id)}:
		default: // the stream is gone or not reading: the log and metric remain
		}
	}
}
