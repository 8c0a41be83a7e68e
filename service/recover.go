package service

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/kord-fss/kord/module/msg"
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
//
// Every request is named by its application identity and id (rid,
// caller.go): two applications' requests under one id are two requests
// in each list, record entry and notice. This file is the handshake's
// recovery exchange (what a site lists, how the peer's lists narrow its
// own record); resend.go answers resends from it; void.go carries the
// void and spent notices.

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
	voided bool                // the peer's void report for it was handled (peerVoid)
	// slabFirst, slabN: the bulk its keys came from (0: per counter)
	slabFirst uint64
	slabN     int
}

// shape is a BatchItem's fields (a BatchItem is not copied by value).
type shape struct {
	// app: the application identity the id is scoped by (caller.go):
	// two applications' requests under one id are two requests.
	app                       string
	id, beta                  uint64
	mode, typ, in, out, count uint32
	deriveBeta                bool
	// vec: a payload vector's group and public elements (appendVec's
	// bytes; empty for one element), as a string so shapes compare.
	vec string
}

// key is the request the shape is of: its application and id.
func (s shape) key() rid { return rid{s.app, s.id} }

// jobShape is j's shape, with its application identity (a batch's items
// leave BatchItem.app empty: Batch.app).
func jobShape(j *job) shape {
	s := shapeOf(j.item)
	s.app = j.app
	return s
}

func shapeOf(it *pb.BatchItem) shape {
	return shape{app: it.GetApp(), id: it.GetId(), beta: it.GetBeta(), mode: it.GetMode(), typ: it.GetType(), in: it.GetInBits(),
		out: it.GetOutBits(), count: it.GetCount(), deriveBeta: it.GetDeriveBeta(), vec: string(appendVec(nil, it))}
}

func (s shape) item() *pb.BatchItem {
	it := &pb.BatchItem{App: s.app, Id: s.id, Mode: s.mode, Type: s.typ, InBits: s.in, OutBits: s.out, Count: s.count,
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
			p.recent[p.recentNext] = recentRec{shape: jobShape(j), first: j.vFirst, n: j.vn, notice: j.notice,
				slabFirst: j.slabFirst, slabN: j.slabN}
			p.recentNext = (p.recentNext + 1) % recentKeys
			for k := range j.vn {
				c := j.vFirst + uint64(k)
				p.tags[c%recentKeys] = j.tagAt(k)
				p.tagCtr[c%recentKeys] = c
			}
			continue
		}
		p.recent[p.recentNext] = recentRec{shape: jobShape(j), first: reps[i][0].Counter, n: len(reps[i]), notice: j.notice,
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
			out = append(out, &pb.RecentItem{Item: &pb.BatchItem{App: s.app, Id: s.id}, ErrorClass: c})
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
				out = append(out, &pb.RecentItem{Item: jobShape(j).item(), FirstCounter: j.vFirst,
					Digest: recoverDigest(func(k int) ([16]byte, bool) { return j.tagAt(k), true }, j.vn),
					Seq:    h.seq, Held: true, BulkFirst: j.slabFirst, BulkN: uint32(j.slabN)})
				continue
			}
			if len(h.replies[i]) == 0 {
				continue
			}
			out = append(out, &pb.RecentItem{Item: jobShape(j).item(), FirstCounter: h.replies[i][0].Counter,
				Digest: outputsDigest(h.replies[i]), Seq: h.seq, Held: true, BulkFirst: j.slabFirst, BulkN: uint32(j.slabN)})
		}
	}
	return out
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
func peerViews(items []*pb.RecentItem) map[rid]peerView {
	out := make(map[rid]peerView, len(items))
	for _, it := range items {
		if it.GetItem() == nil {
			continue
		}
		id := rid{it.Item.GetApp(), it.Item.GetId()}
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
		r := &recoverRec{shape: shape{app: id.app, id: id.id}, class: v.class}
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
func (p *Party) settleHeldOwn(items []*pb.RecentItem) (ok, void, spent []rid, confirms [][]byte) {
	for _, it := range items {
		if !it.Held || it.GetItem() == nil || it.GetErrorClass() != "" {
			continue
		}
		id := rid{it.Item.GetApp(), it.Item.GetId()}
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
			"app", id.app, "id", id.id, "first_counter", it.FirstCounter)
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
		s := &served{shape: jobShape(j), req: reqDigest(j), slabFirst: j.slabFirst, slabN: j.slabN}
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
	sh := jobShape(j)
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

// setHeldLists puts party 0's settlement of party 1's held requests in
// wm: the ids of each list with, in order, their applications.
func setHeldLists(wm *pb.Witness, ok, void, spent []rid, confirms [][]byte) {
	wm.HeldOk, wm.HeldOkApps = splitRids(ok)
	wm.HeldVoid, wm.HeldVoidApps = splitRids(void)
	wm.HeldSpent, wm.HeldSpentApps = splitRids(spent)
	wm.HeldOkConfirms = confirms
}

// heldLists reads party 0's settlement of the held requests (party 1):
// each list's ids with their applications; lists of mismatched lengths
// are refused.
func heldLists(w *pb.Witness) (ok, void, spent []rid, err error) {
	if ok, err = joinRids(w.HeldOk, w.HeldOkApps); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: held_ok: %w", errDesync, err)
	}
	if void, err = joinRids(w.HeldVoid, w.HeldVoidApps); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: held_void: %w", errDesync, err)
	}
	if spent, err = joinRids(w.HeldSpent, w.HeldSpentApps); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: held_spent: %w", errDesync, err)
	}
	return ok, void, spent, nil
}
