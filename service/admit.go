// Admission and delivery at a party: an application's requests admitted,
// queued (party 0) or held pending (party 1), refused with their class, and
// their pairs delivered.

package service

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// admit hands the validated jobs of one message to the pipeline, in
// order, under one lock each for the admission bound and the queue (or
// pending set); errs[i] (errs may be nil) is job i's validation error. Every job
// that is refused, now or before, is answered at once.
func (p *Party) admit(js []*job, errs []error) {
	ok := js
	if errs != nil {
		ok = make([]*job, 0, len(js))
		for i, j := range js {
			if errs[i] != nil {
				p.refuse(j, errs[i])
			} else {
				ok = append(ok, j)
			}
		}
	}
	if aerrs := p.adm.acquireAll(ok); aerrs != nil {
		in := ok[:0:0]
		for i, j := range ok {
			if aerrs[i] != nil {
				p.refuse(j, aerrs[i])
			} else {
				in = append(in, j)
			}
		}
		ok = in
	}
	// What a restarted party's peer sent it is looked up and the others
	// queued under one hold of recoverMu, so that keepRecovered, which
	// takes the queued ones it covers, sees each job once (recover.go).
	p.recoverMu.RLock()
	if p.recoveredN.Load() == 0 {
		p.admitted(ok)
		p.recoverMu.RUnlock()
		return
	}
	p.recoverMu.RUnlock()
	p.recoverMu.Lock()
	defer p.recoverMu.Unlock()
	p.admitted(p.takeRecoveredLocked(ok))
}

// admitted queues (party 0) or adds to the pending set (party 1) jobs
// already admitted.
func (p *Party) admitted(ok []*job) {
	if len(ok) == 0 {
		return
	}
	if p.cfg.Party == 0 {
		p.m.pending.Set(float64(p.q.pushAll(ok)))
		return
	}
	perrs, n := p.pend.addAll(ok)
	for i, err := range perrs {
		if err != nil {
			p.adm.release(ok[i])
			p.refuse(ok[i], err)
		}
	}
	p.m.pending.Set(float64(n))
}

// refuse answers a request the party will not queue.
func (p *Party) refuse(j *job, err error) {
	j.refused = true
	class := ErrClassBadRequest
	if errors.Is(err, errExhausted) {
		class = ErrClassExhausted
	}
	p.m.rejects.WithLabelValues(class).Inc()
	switch {
	case class == ErrClassExhausted:
		j.code = codes.ResourceExhausted
	case errors.Is(err, errDupID):
		j.code = codes.InvalidArgument
	}
	j.fail(class, "%v", err)
}

// deliver finishes the jobs of a batch with their outputs. Party 0
// reports false, delivering nothing (the outputs wiped), when its record
// refused them: its state file is closed, the party is stopping, and
// what it delivered now its next process would not know (ledger.put).
func (p *Party) deliver(jobs []*job, reps [][]msg.CollectResponse) bool {
	type shape struct{ typ, mode uint32 }
	counts := make(map[shape]int, 2)
	// Recorded before the application or party 1 gets them (recover.go).
	if p.cfg.Party == 0 && p.ledger.durable() && !p.ledger.put(servedOf(jobs, reps)) {
		wipeJobReplies(jobs, reps)
		return false
	}
	p.record(jobs, reps)
	n := 0
	var next uint64
	for i, j := range jobs {
		counts[shape{j.item.Type, j.item.Mode}] += j.keys()
		n += j.keys()
		for k := range reps[i] {
			next = max(next, reps[i][k].Counter+1)
		}
		if j.vn > 0 {
			next = max(next, j.vFirst+uint64(j.vn))
		}
		j.finish(reps[i])
	}
	// The module is at least past the batch's counters.
	p.setNext(next, true)
	p.keysDelivered.Add(uint64(n))
	for s, c := range counts {
		typ, mode := msg.TypeLabel(byte(s.typ)), msg.Mode(s.mode).String()
		if s.mode == ItemCorrelation { // counted in counters taken
			typ, mode = ModeCorrelation, ModeCorrelation
		}
		p.m.keys.WithLabelValues(typ, mode).Add(float64(c))
	}
	return true
}

// request validates and enqueues one request, or answers it at once.
func (p *Party) request(r *pb.KeyRequest) *job {
	return p.requests(&pb.KeyRequests{Requests: []*pb.KeyRequest{r}}, nil, nil)[0]
}

// requestOf is request for application app's request.
func (p *Party) requestOf(app string, r *pb.KeyRequest) *job {
	return p.requestsOf(app, &pb.KeyRequests{Requests: []*pb.KeyRequest{r}}, nil, nil)[0]
}

// requests is requestsOf for the anonymous application.
func (p *Party) requests(rs *pb.KeyRequests, seen *idSet, notices chan<- *pb.KeyReply) []*job {
	return p.requestsOf("", rs, seen, notices)
}

// requestsOf validates and enqueues the requests of one message of
// application app (the unpacked ones, then the packed ones), or answers
// them at once; it
// returns their jobs in that order. The jobs share one allocation. seen
// (nil: not checked) holds the ids already accepted on the stream: a
// request reusing one is refused, and the ids accepted now join it.
// notices (nil: none) takes void notices for the stream's delivered ids.
func (p *Party) requestsOf(app string, rs *pb.KeyRequests, seen *idSet, notices chan<- *pb.KeyReply) []*job {
	most := len(rs.Requests)
	pk := rs.Packed
	if pk != nil {
		most += max(len(pk.Ids), 1) // eachPacked yields at most this many
	}
	slab := make([]job, most)
	js := make([]*job, 0, most)
	var errs []error
	next := func() *job {
		j := &slab[len(js)]
		js = append(js, j)
		return j
	}
	setErr := func(err error) {
		if errs == nil {
			errs = make([]error, most)
		}
		errs[len(js)-1] = err
	}
	refuse := func(id uint64, err error) bool {
		j := next()
		j.id = id
		setErr(err)
		return true
	}
	slow := func(r *pb.KeyRequest, id uint64, err error) bool {
		if err != nil {
			return refuse(id, err)
		}
		j := next()
		if err := j.init(r); err != nil {
			*j = job{}
			if r != nil {
				j.id = r.Id
			}
			setErr(fmt.Errorf("request %d: %w", j.id, err))
		}
		return true
	}
	for _, r := range rs.Requests {
		slow(r, r.GetId(), nil)
	}
	if pk != nil {
		if simplePacked(pk) {
			var r pb.KeyRequest
			for i := range pk.Ids {
				if j := next(); !j.initPacked(pk, i) {
					// Anything unusual is checked the long way, for the
					// same reply as an unpacked request would get.
					js = js[:len(js)-1]
					*j = job{}
					err := packedRequest(pk, i, &r)
					slow(&r, pk.Ids[i], err)
				}
			}
		} else {
			eachPacked(pk, slow)
		}
	}
	if errs != nil {
		errs = errs[:len(js)]
	}
	if seen != nil {
		for i, j := range js {
			if (errs == nil || errs[i] == nil) && seen.has(j.id) {
				if errs == nil {
					errs = make([]error, len(js))
				}
				errs[i] = fmt.Errorf("%w: request %d: this id was already used on this stream (ids are unique for the life of a stream)", errDupID, j.id)
			}
		}
	}
	for _, j := range js {
		j.notice, j.app = notices, app
	}
	p.admit(js, errs)
	if seen != nil {
		for i, j := range js {
			if (errs == nil || errs[i] == nil) && !j.refused {
				seen.add(j.id)
			}
		}
	}
	return js
}
