// Party 1's pending set: admitted requests waiting for party 0's batch to
// claim them, unmatched ids remembered, and expiry by the match timeout.

package service

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// pending is party 1's requests by application and id, waiting for party
// 0's order.
type pending struct {
	mu      sync.Mutex
	jobs    map[rid]*job
	wake    chan struct{} // closed and replaced when jobs arrive while a claim waits
	waiting int           // claims waiting on wake
	// unmatched: ids party 0 batched when this site had no request for
	// them, or whose request here expired unmatched, with when; a claim
	// does not wait for them again (party 0 retries them alone).
	unmatched map[rid]time.Time
	// batchAt: when the last batch came; drainedAt: when the last batch
	// taken with party 0's queue left empty came (expire).
	batchAt, drainedAt time.Time
}

// sawBatch notes a batch from party 0, which left queued requests in its
// queue.
func (p *pending) sawBatch(queued uint64) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.batchAt = now
	if queued == 0 {
		p.drainedAt = now
	}
}

// idleDrained: a session with no batch for this long means party 0 holds
// no request either (it batches whatever it has at once).
const idleDrained = 100 * time.Millisecond

func newPending() *pending {
	return &pending{jobs: map[rid]*job{}, wake: make(chan struct{}), unmatched: map[rid]time.Time{}}
}

// maxUnmatched bounds the ids pending remembers as unmatched.
const maxUnmatched = 1 << 16

// noteUnmatched remembers app's ids as unmatched (now), so that a claim of
// them does not wait again; entries older than keep are dropped.
func (p *pending) noteUnmatched(app string, ids []uint64, keep time.Duration) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pruneUnmatched(now, keep)
	for _, id := range ids {
		if len(p.unmatched) >= maxUnmatched {
			break
		}
		p.unmatched[rid{app, id}] = now
	}
}

// pruneUnmatched drops unmatched ids noted more than keep before now; p.mu held.
func (p *pending) pruneUnmatched(now time.Time, keep time.Duration) {
	for id, t := range p.unmatched {
		if now.Sub(t) > keep {
			delete(p.unmatched, id)
		}
	}
}

// expire fails, as unmatched, the pending requests that have waited
// longer than timeout, counted from their arrival (or, during a session,
// the start of the peer session, since, whichever is later), and that
// party 0 cannot be holding either: no session is up (since zero: party
// 0 is unreachable or withholds its handshake, and batches nothing), or
// its queue was empty after that time (a batch said so, or no batch came
// for idleDrained). It remembers their ids (keep: how long) and returns
// how many it failed.
func (p *pending) expire(timeout time.Duration, since time.Time, keep time.Duration) int {
	var gone []*job
	now := time.Now()
	p.mu.Lock()
	drained := p.drainedAt
	if last := max(p.batchAt.UnixNano(), since.UnixNano()); since.IsZero() || now.Sub(time.Unix(0, last)) > idleDrained {
		drained = now
	}
	for id, j := range p.jobs {
		start := j.arrived
		if start.Before(since) {
			start = since
		}
		if !j.arrived.IsZero() && now.Sub(start) > timeout && drained.After(start) {
			delete(p.jobs, id)
			gone = append(gone, j)
			if len(p.unmatched) < maxUnmatched {
				p.unmatched[id] = now
			}
		}
	}
	p.pruneUnmatched(now, keep)
	p.mu.Unlock()
	for _, j := range gone {
		j.fail(ErrClassUnmatched, "no request with id %d reached party 0 within the match timeout; nothing was generated for it", j.id)
	}
	return len(gone)
}

// take removes and returns the pending jobs with the given ids, of any
// application (recover.go: recovery records name ids only).
func (p *pending) take(ids []rid) []*job {
	if len(ids) == 0 {
		return nil
	}
	want := make(map[rid]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*job
	for k, j := range p.jobs {
		if want[k] {
			delete(p.jobs, k)
			out = append(out, j)
		}
	}
	return out
}

// notify wakes waiting claims; p.mu held.
func (p *pending) notify() {
	if p.waiting > 0 {
		close(p.wake)
		p.wake = make(chan struct{})
	}
}

func (p *pending) add(j *job) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := rid{j.app, j.id}
	if _, ok := p.jobs[k]; ok {
		return fmt.Errorf("%w: request %d is already pending at this site", errDupID, j.id)
	}
	j.arrived = time.Now()
	p.jobs[k] = j
	p.notify()
	return nil
}

// addAll adds js as add does one at a time, under one lock; errs (nil if
// none) holds the refusals, n the pending set's size after.
func (p *pending) addAll(js []*job) (errs []error, n int) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, j := range js {
		k := rid{j.app, j.id}
		if _, ok := p.jobs[k]; ok {
			if errs == nil {
				errs = make([]error, len(js))
			}
			errs[i] = fmt.Errorf("%w: request %d is already pending at this site", errDupID, j.id)
			continue
		}
		j.arrived = now
		p.jobs[k] = j
	}
	p.notify()
	return errs, len(p.jobs)
}

func (p *pending) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.jobs)
}

// putBack returns taken jobs to the pending set; a spent job is failed
// instead (spent.go: it must never be submitted again).
func (p *pending) putBack(js []*job) {
	js = dropSpent(js)
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, j := range js {
		if !j.putBack {
			// Its match timeout starts again, once: a peer that has it
			// claimed and refused without end must not keep it waiting.
			j.arrived, j.putBack = now, true
		}
		p.jobs[rid{j.app, j.id}] = j
	}
	p.notify()
}

// claim takes app's jobs for items, waiting up to the deadline for ids
// that have not arrived (a request of another application with the same id
// is not one of them). It returns the ids still missing and the ids whose
// request differs; on any of those it takes nothing. Each wake-up looks
// only at the ids still missing.
func (p *pending) claim(ctx context.Context, app string, items []*pb.BatchItem, tier msg.Tier, deadline time.Time) (js []*job, missing, differ []uint64) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	todo := make([]int, len(items)) // indices of items not seen yet
	for i := range todo {
		todo[i] = i
	}
	js = make([]*job, len(items))
	for waited := false; ; waited = true {
		p.mu.Lock()
		left := todo[:0]
		for _, i := range todo {
			it := items[i]
			j, ok := p.jobs[rid{app, it.Id}]
			switch {
			case !ok:
				left = append(left, i)
			case !sameShape(j.item, it) || (j.tier != 0 && j.tier != tier):
				differ = append(differ, it.Id)
			}
			js[i] = j
		}
		todo = left
		if len(differ) > 0 {
			for _, i := range todo {
				missing = append(missing, items[i].Id)
			}
			p.mu.Unlock()
			return nil, missing, differ
		}
		if len(todo) == 0 && waited {
			// A request seen before a wait may have been failed or
			// replaced since (its application went away): look again
			// before taking any.
			for i, it := range items {
				j, ok := p.jobs[rid{app, it.Id}]
				switch {
				case !ok:
					todo = append(todo, i)
				case !sameShape(j.item, it) || (j.tier != 0 && j.tier != tier):
					differ = append(differ, it.Id)
				}
				js[i] = j
			}
			if len(differ) > 0 {
				p.mu.Unlock()
				return nil, nil, differ
			}
		}
		if len(todo) == 0 {
			// Every job was looked up under this hold of the lock.
			for _, it := range items {
				delete(p.jobs, rid{app, it.Id})
				delete(p.unmatched, rid{app, it.Id})
			}
			p.mu.Unlock()
			return js, nil, nil
		}
		// Ids already found unmatched (party 0 retries them alone) are
		// not waited for again.
		known := true
		for _, i := range todo {
			if _, ok := p.unmatched[rid{app, items[i].Id}]; !ok {
				known = false
				break
			}
		}
		if known {
			p.mu.Unlock()
			for _, i := range todo {
				missing = append(missing, items[i].Id)
			}
			return nil, missing, nil
		}
		p.waiting++
		wake := p.wake
		p.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
		}
		var stop bool
		select {
		case <-wake:
		case <-timer.C:
			stop = true
		case <-ctx.Done():
			stop = true
		}
		p.mu.Lock()
		p.waiting--
		p.mu.Unlock()
		if stop {
			for _, i := range todo {
				missing = append(missing, items[i].Id)
			}
			return nil, missing, nil
		}
	}
}

// failSpent removes and fails the pending jobs that sr names (the peer's
// module opened frames for them); it returns how many it failed.
func (p *pending) failSpent(sr []spentRef) int {
	var gone []*job
	if len(sr) == 0 {
		return 0
	}
	// A report names run, batch, id and application: one request.
	want := make(map[spentRef]bool, len(sr))
	for _, r := range sr {
		want[r] = true
	}
	p.mu.Lock()
	for k, j := range p.jobs {
		if j.seq != 0 && want[spentRef{run: j.run, seq: j.seq, id: k.id, app: k.app}] {
			delete(p.jobs, k)
			gone = append(gone, j)
		}
	}
	p.mu.Unlock()
	for _, j := range gone {
		j.fail(ErrClassSpent, "the peer's module opened this site's frame for the request and its batch was not delivered; α spent: choose a fresh α")
	}
	return len(gone)
}

// fail removes and fails app's jobs with the given ids.
func (p *pending) fail(app string, ids []uint64, class, format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		if j, ok := p.jobs[rid{app, id}]; ok {
			delete(p.jobs, rid{app, id})
			j.fail(class, format, args...)
		}
	}
}
