package service

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Recovery after a party restart (issues 20, 33): a pair is delivered at
// both sites or at neither across a crash of either party.
//
// A party that crashes loses its requests and the answers it had not yet
// sent; its module keeps running and hands out the same output again for
// a recent counter (its collect is idempotent over the last 8192
// counters). What a restarted party may hand out again is decided by its
// own durable record alone (ledger.go): for each recent id, the counters
// it served, the request's shape, a digest of its own side of the request
// (its shares) and a digest of its own outputs' pair tags. Party 0 writes
// an entry when it delivers (after the two sites' digests agreed), party
// 1 when it holds a batch (before its reply lets party 0 deliver).
//
// Only in its first session after its own restart (the record's epoch
// says so; a first start is not a restart) does a party use it. Its peer
// sends what it knows at that handshake (HelloReply.recent and held,
// Witness.recent, spent tombstones); those lists can only narrow:
//
//   - an id the peer answered spent or void gets that class here too;
//   - an id the peer delivered or holds that this site has no entry for,
//     or one at other counters or with another pair-tag digest, is void
//     (the peer's application is told);
//   - party 1 hands out an entry again only if party 0 lists the same id
//     delivered at the same counters with the same digest (party 1
//     recorded it before party 0 compared).
//
// A resend is answered from the entry only if its shape and its own
// shares digest equal the entry's, and the outputs the module hands out
// again at the entry's counters have the entry's pair-tag digest;
// otherwise void. Held batches of party 1 after party 0's restart are
// settled from party 0's entries (same id, counters, digest: delivered;
// else void), never by asking the module about the peer's digest. No
// frame is opened again on any path: the spent rule holds. The
// restarted party keeps this recoverWindow; an id resent later is a new
// request.

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
	digest    []byte   // this site's recorded pair-tag digest
	req       [32]byte // this site's recorded request digest
	class     string   // non-empty: answer the id with this class
	// notify: the peer holds or delivered a share of the id; answering it
	// void here is reported to the peer (its application is told).
	notify bool
	at     time.Time
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

// listItems is what this site tells a restarted peer it served: its own
// record's entries (outputs served, or the class answered), oldest first,
// which outlive this party's own restarts; without a state file, what it
// delivered since it started.
func (p *Party) listItems() []*pb.RecentItem {
	if !p.ledger.durable() {
		return p.recentItems()
	}
	es := p.ledger.entries()
	all := make([]served, 0, len(es))
	for _, s := range es {
		all = append(all, s)
	}
	slices.SortFunc(all, func(a, b served) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]*pb.RecentItem, 0, len(all))
	for _, s := range all {
		if s.class != "" {
			c := ErrClassSpent
			if s.class == ErrClassVoid {
				c = ErrClassVoid
			}
			out = append(out, &pb.RecentItem{Item: &pb.BatchItem{Id: s.id}, ErrorClass: c})
			continue
		}
		out = append(out, &pb.RecentItem{Item: s.shape.item(), FirstCounter: s.first, Digest: slices.Clone(s.tags[:]),
			BulkFirst: s.slabFirst, BulkN: uint32(s.slabN)})
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
			if r.class == ErrClassVoid && r.notify {
				p.addVoid(j.id)
			}
			p.ledger.answered([]uint64{j.id}, r.class)
			p.m.rejects.WithLabelValues(r.class).Inc()
			j.fail(r.class, "request %d: its pair ended %s before a restart of a party (α spent: choose a fresh α)", j.id, r.class)
			continue
		}
		outs, err := p.recollect(j, r)
		if err != nil {
			p.ledger.answered([]uint64{j.id}, ErrClassVoid)
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
		return nil, fmt.Errorf("the request differs from the one served before")
	}
	if reqDigest(j) != r.req {
		return nil, fmt.Errorf("the request's shares differ from the ones served before")
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
		// The module hands the outputs out again only for the request
		// they were generated for (socket.CollectRange.Expect).
		ex, err := expectOf(j, r.n)
		if err != nil {
			return nil, err
		}
		cr := &socket.CollectRange{First: r.first, Count: r.n, Expect: ex}
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
		return nil, fmt.Errorf("the module's outputs at the recorded counters are not the ones served")
	}
	j.keyBuf, j.keyOff, j.slabFirst, j.slabN, j.slab = nil, 0, r.slabFirst, r.slabN, nil
	j.keyRef, j.keyRegion = nil, nil // outs are views of another buffer, not pooled
	j.clearView()
	return outs, nil
}

// expectOf is j's share requests for n keys, as they were submitted to
// the module (a derived job's one shape for each of its keys).
func expectOf(j *job, n int) ([]msg.Share, error) {
	switch {
	case j.derived > 0 && len(j.shares) == 1 && j.derived == n:
		out := make([]msg.Share, n)
		for i := range out {
			out[i] = j.shares[0]
		}
		return out, nil
	case j.derived == 0 && len(j.shares) == n:
		return slices.Clone(j.shares), nil
	}
	return nil, fmt.Errorf("the request has another number of keys than the one served before")
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

// peerView is what the peer's lists say of one id.
type peerView struct {
	class  string // spent or void: the peer answered it so
	first  uint64
	digest []byte
	shape  shape
	listed bool // delivered or held there
}

// peerViews reads the peer's lists (malformed items are skipped).
func peerViews(items []*pb.RecentItem) map[uint64]peerView {
	out := make(map[uint64]peerView, len(items))
	for _, it := range items {
		if it.GetItem() == nil {
			continue
		}
		id := it.Item.GetId()
		v := out[id]
		if c := it.GetErrorClass(); c != "" {
			if c != ErrClassVoid {
				c = ErrClassSpent // the only other class a peer sends
			}
			if v.class != ErrClassVoid {
				v.class = c
			}
		} else if !v.listed {
			v.listed, v.first, v.digest, v.shape = true, it.FirstCounter, it.Digest, shapeOf(it.Item)
		}
		out[id] = v
	}
	return out
}

// ownRecovery (a party in its first session after its own restart)
// builds what it answers resends with: its own ledger's entries, narrowed
// by the peer's lists. needPeer (party 1): an entry is handed out again
// only if the peer lists the id delivered at the same counters with the
// same digest.
func (p *Party) ownRecovery(peer []*pb.RecentItem, needPeer bool) []*recoverRec {
	own := p.ledger.entries()
	pv := peerViews(peer)
	out := make([]*recoverRec, 0, len(own)+len(pv))
	for id, s := range own {
		r := &recoverRec{shape: s.shape, first: s.first, n: s.n, slabFirst: s.slabFirst, slabN: s.slabN,
			digest: slices.Clone(s.tags[:]), req: s.req}
		v := pv[id]
		same := v.listed && v.first == s.first && string(v.digest) == string(s.tags[:]) && v.shape == s.shape
		switch {
		case s.class != "":
			r.class = s.class
		case v.class != "":
			r.class = v.class
		case v.listed && !same, !v.listed && needPeer:
			r.class, r.notify = ErrClassVoid, v.listed
		}
		out = append(out, r)
	}
	for id, v := range pv {
		if _, ok := own[id]; ok {
			continue
		}
		// Not served here (as far as this site's record goes): the peer's
		// word gives it a class, never outputs.
		r := &recoverRec{shape: shape{id: id}, class: v.class}
		if r.class == "" {
			r.class, r.notify = ErrClassVoid, true
		}
		out = append(out, r)
	}
	return out
}

// settleHeldOwn (party 0, at a handshake where party 1 lists batches it
// held for an earlier run of party 0) settles them from this site's own
// record: an id this site delivered at the same counters with the same
// pair-tag digest is complete (party 1 delivers it), one it answered
// spent or tampered is spent (as its application was told), any other is
// void. It asks the module nothing.
func (p *Party) settleHeldOwn(items []*pb.RecentItem) (ok, void, spent []uint64, confirms [][]byte) {
	for _, it := range items {
		if !it.Held || it.GetItem() == nil || it.GetErrorClass() != "" {
			continue
		}
		id := it.Item.GetId()
		s, found := p.ledger.get(id)
		if found && s.class == "" && s.first == it.FirstCounter && string(s.tags[:]) == string(it.Digest) &&
			s.shape == shapeOf(it.Item) && s.conf != ([32]byte{}) {
			// With the confirmation of this site's tags (confirm.go),
			// recorded when it delivered.
			ok, confirms = append(ok, id), append(confirms, slices.Clone(s.conf[:]))
			continue
		}
		if found && (s.class == ErrClassSpent || s.class == ErrClassTampered) {
			spent = append(spent, id) // as this site answered it
			continue
		}
		void = append(void, id)
		p.log.Warn("a pair held by party 1 for an earlier run of this party is not in this site's record; void at both sites",
			"id", id, "first_counter", it.FirstCounter)
	}
	return ok, void, spent, confirms
}

// servedOf is the ledger entries of delivered (party 0) or held (party 1)
// jobs with their outputs reps; correlations are not re-collected and
// get none.
func servedOf(jobs []*job, reps [][]msg.CollectResponse) []*served {
	out := make([]*served, 0, len(jobs))
	for i, j := range jobs {
		if len(reps[i]) == 0 && j.vn == 0 || j.corr != nil {
			continue
		}
		s := &served{shape: shapeOf(j.item), req: reqDigest(j), slabFirst: j.slabFirst, slabN: j.slabN}
		var d, c []byte
		if j.vn > 0 {
			s.first, s.n = j.vFirst, j.vn
			d = recoverDigest(func(k int) ([16]byte, bool) { return j.tagAt(k), true }, j.vn)
			c = itemConfirm(j.vFirst, j.tagAt, j.vn)
		} else {
			s.first, s.n = reps[i][0].Counter, len(reps[i])
			d = outputsDigest(reps[i])
			c = itemConfirm(s.first, func(k int) [16]byte { return reps[i][k].PairTag }, len(reps[i]))
		}
		copy(s.tags[:], d)
		copy(s.conf[:], c)
		out = append(out, s)
	}
	return out
}

// reqDigest is the digest of this site's side of j's request: its
// application identity, its shape,
// its shares of α and β (or a derived request's fields), its payload
// vector's shares and its evaluation points. It is kept on disk; it
// carries no key material.
func reqDigest(j *job) [32]byte {
	h := sha256.New()
	h.Write([]byte("kord/v1/served-request"))
	var b []byte
	// The application identity its id is scoped by (apptls).
	b = binary.LittleEndian.AppendUint64(b, uint64(len(j.app)))
	b = append(b, j.app...)
	sh := shapeOf(j.item)
	b = binary.LittleEndian.AppendUint64(b, sh.id)
	b = binary.LittleEndian.AppendUint64(b, sh.beta)
	for _, v := range []uint32{sh.mode, sh.typ, sh.in, sh.out, sh.count} {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	if sh.deriveBeta {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(len(sh.vec)))
	b = append(b, sh.vec...)
	put := func(tag byte, vs ...uint64) {
		b = append(b, tag)
		b = binary.LittleEndian.AppendUint64(b, uint64(len(vs)))
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
	}
	b = append(b, 'S')
	b = binary.LittleEndian.AppendUint64(b, uint64(len(j.shares)))
	for _, x := range j.shares {
		b = binary.LittleEndian.AppendUint64(b, x.AlphaShare)
		b = binary.LittleEndian.AppendUint64(b, x.BetaShare)
		b = binary.LittleEndian.AppendUint64(b, x.Beta)
	}
	put('V', j.betaVec...)
	put('P', j.points...)
	h.Write(b)
	clear(b)
	var out [32]byte
	h.Sum(out[:0])
	return out
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
	p.ledger.answered(ids, ErrClassSpent)
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
	select {
	case p.voidKick <- struct{}{}:
	default:
	}
}

// sendVoids sends the ids to report void as soon as there are any
// (VoidNotice), until ctx ends or a send fails; send is the session's.
func (p *Party) sendVoids(ctx context.Context, send func(*pb.PeerMsg) error) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.voidKick:
		}
		ids := p.takeVoid()
		if len(ids) == 0 {
			continue
		}
		if err := send(&pb.PeerMsg{M: &pb.PeerMsg_VoidNotice{VoidNotice: &pb.VoidNotice{Ids: ids}}}); err != nil {
			p.restoreVoid(ids)
			return
		}
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
	var known []uint64
	for _, id := range ids {
		if _, ok := p.ledger.get(id); ok {
			known = append(known, id)
		}
	}
	p.ledger.answered(known, ErrClassVoid)
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
