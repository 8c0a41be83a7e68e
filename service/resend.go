package service

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
)

// Answering resends after a restart (recover.go): what the handshake's
// recovery exchange kept (keepRecovered) answers an application's resend
// of a request, by application identity and id: the class recorded, or
// the outputs its module hands out again at the recorded counters when
// they are the ones served; otherwise void.

// keepRecovered stores what the peer sent for ids this party may be
// asked for again, and answers those already waiting (queued or pending).
func (p *Party) keepRecovered(recs []*recoverRec) {
	if len(recs) == 0 {
		return
	}
	now := time.Now()
	ids := make([]rid, 0, len(recs))
	p.recoverMu.Lock()
	defer p.recoverMu.Unlock()
	if p.recovered == nil {
		p.recovered = map[rid]*recoverRec{}
	}
	for id, r := range p.recovered {
		if now.Sub(r.at) > recoverWindow {
			delete(p.recovered, id)
		}
	}
	for _, r := range recs {
		r.at = now
		p.recovered[r.key()] = r
		ids = append(ids, r.key())
	}
	p.recoveredN.Store(int64(len(p.recovered)))
	var waiting []*job
	if p.cfg.Party == 0 {
		set := make(map[rid]bool, len(ids))
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
		r, ok := p.recovered[rid{j.app, j.id}]
		if ok && now.Sub(r.at) <= recoverWindow {
			delete(p.recovered, rid{j.app, j.id})
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
			if !p.ledger.answered([]rid{{j.app, j.id}}, r.class) {
				continue // going down (Party.back): the next process answers it
			}
			if r.class == ErrClassVoid && r.notify {
				p.addVoid(rid{j.app, j.id})
			}
			p.m.rejects.WithLabelValues(r.class).Inc()
			j.fail(r.class, "request %d: its pair ended %s before a restart of a party (α spent: choose a fresh α)", j.id, r.class)
			continue
		}
		outs, err := p.recollect(j, r)
		if err != nil {
			if !p.ledger.answered([]rid{{j.app, j.id}}, ErrClassVoid) {
				continue // going down (Party.back): the next process answers it
			}
			p.addVoid(rid{j.app, j.id}) // the peer delivered its keys: it tells its application
			p.m.rejects.WithLabelValues(ErrClassVoid).Inc()
			p.log.Warn("a request resent after a party restart cannot be completed; void at both sites",
				"app", j.app, "id", j.id, "first_counter", r.first, "keys", r.n, "err", err)
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
	if jobShape(j) != r.shape {
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
		if outs, err = p.recollectSlab(ctx, j, r); err != nil {
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
			return nil, moduleErr(err)
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
// outputs (views of the slab; the slab's other keys are wiped). The module
// hands the slab out only if it was generated for the bulk j's keys were
// part of (msg.CollectRequest.Expect): its shape, N and, bound, j's own
// shares at j's place in it.
func (p *Party) recollectSlab(ctx context.Context, j *job, r *recoverRec) ([]msg.CollectResponse, error) {
	if r.first < r.slabFirst || r.first-r.slabFirst+uint64(r.n) > uint64(r.slabN) {
		return nil, fmt.Errorf("the recorded counters are outside their bulk")
	}
	ex, at := bulkOf(j, r.slabN), 0
	if ex.Mode == msg.Bound {
		appendBulkShares(ex, j)
		at = int(r.first - r.slabFirst)
		defer func() {
			clear(ex.AlphaShares)
			clear(ex.BetaShares)
		}()
	}
	res, err := p.mod.Do(ctx, []socket.Call{{Collect: &msg.CollectRequest{Counter: r.slabFirst, Count: r.slabN, Expect: ex, ExpectAt: at}}}, true)
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		return nil, moduleErr(err)
	}
	sl := res[0].Collect.Slab
	if sl == nil || sl.First != r.slabFirst || sl.N != r.slabN {
		socket.WipeSlab(sl)
		return nil, fmt.Errorf("module: another slab than counters %d+%d", r.slabFirst, r.slabN)
	}
	off := int(r.first - r.slabFirst)
	outs := appendSlab(make([]msg.CollectResponse, 0, sl.N), sl)
	wipeOutputs(outs[:off])
	wipeOutputs(outs[off+r.n:])
	return outs[off : off+r.n : off+r.n], nil
}
