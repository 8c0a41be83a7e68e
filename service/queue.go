// Party 0's queue: admitted requests waiting for a batch, taken one tier and
// one application at a time.

package service

import (
	"context"
	"sync"
	"time"

	"github.com/kord-fss/kord/module/msg"
)

// queue is party 0's FIFO of requests waiting for a batch.
type queue struct {
	mu    sync.Mutex
	jobs  []*job
	keys  int
	ready chan struct{} // signalled when jobs arrive
}

func newQueue() *queue { return &queue{ready: make(chan struct{}, 1)} }

func (q *queue) push(j *job) {
	q.mu.Lock()
	if j.arrived.IsZero() {
		j.arrived = time.Now()
	}
	q.jobs = append(q.jobs, j)
	q.keys += j.keys()
	q.mu.Unlock()
	q.signal()
}

// pushAll appends js in order and returns the queue's length.
func (q *queue) pushAll(js []*job) int {
	now := time.Now()
	q.mu.Lock()
	q.jobs = append(q.jobs, js...)
	for _, j := range js {
		q.keys += j.keys()
		if j.arrived.IsZero() {
			j.arrived = now
		}
	}
	n := len(q.jobs)
	q.mu.Unlock()
	q.signal()
	return n
}

func (q *queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// requeue puts jobs back at the front, in order; a spent job is failed
// instead (spent.go: it must never be submitted again).
func (q *queue) requeue(js []*job) {
	js = dropSpent(js)
	if len(js) == 0 {
		return
	}
	q.mu.Lock()
	n := 0
	for _, j := range js {
		n += j.keys()
	}
	q.jobs = append(append([]*job(nil), js...), q.jobs...)
	q.keys += n
	q.mu.Unlock()
	q.signal()
}

// failSpent removes and fails the queued jobs that sr names (the peer's
// module opened frames for them); it returns how many it failed.
func (q *queue) failSpent(sr []spentRef) int {
	if len(sr) == 0 {
		return 0
	}
	set := make(map[spentRef]bool, len(sr))
	for _, r := range sr {
		set[r] = true
	}
	q.mu.Lock()
	gone := q.removeLocked(func(j *job) bool { return j.seq != 0 && set[spentRef{run: j.run, seq: j.seq, id: j.id, app: j.app}] })
	q.mu.Unlock()
	for _, j := range gone {
		j.fail(ErrClassSpent, "the peer's module opened this site's frame for the request and its batch was not delivered; α spent: choose a fresh α")
	}
	return len(gone)
}

// dropSpent fails the spent jobs of js (a safety net: Party.back fails
// them with their class first) and returns the others.
func dropSpent(js []*job) []*job {
	for i, j := range js {
		if j.spent.Load() {
			out := append([]*job(nil), js[:i]...)
			for _, j := range js[i:] {
				if j.spent.Load() {
					if !j.answered() {
						j.fail(ErrClassSpent, "the batch ended after this site's module opened the peer's frame; α spent")
					}
					continue
				}
				out = append(out, j)
			}
			return out
		}
	}
	return js
}

// takeDoubt removes and returns the queued jobs in doubt when take is
// set; otherwise it clears their doubt and returns none.
func (q *queue) takeDoubt(take bool) []*job {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.removeLocked(func(j *job) bool {
		if j.doubt && take {
			return true
		}
		j.doubt = false
		return false
	})
}

// expire removes and returns the queued jobs that arrived before t.
func (q *queue) expire(t time.Time) []*job {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.removeLocked(func(j *job) bool { return j.arrived.Before(t) })
}

// extract removes and returns the queued jobs whose requests (application
// and id) are in set.
func (q *queue) extract(set map[rid]bool) []*job {
	if len(set) == 0 {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.removeLocked(func(j *job) bool { return set[rid{j.app, j.id}] })
}

// removeLocked removes the queued jobs for which remove reports true and
// returns them in queue order, keeping the others in order; q.mu is held.
func (q *queue) removeLocked(remove func(*job) bool) []*job {
	var out []*job
	keep := q.jobs[:0]
	for _, j := range q.jobs {
		if remove(j) {
			out = append(out, j)
			q.keys -= j.keys()
			continue
		}
		keep = append(keep, j)
	}
	clear(q.jobs[len(keep):])
	q.jobs = keep
	return out
}

func (q *queue) size() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.jobs)
}

// take waits for jobs and returns a batch of at most max keys whose framed
// requests share one tier.
func (q *queue) take(ctx context.Context, max int) ([]*job, msg.Tier, error) {
	for {
		q.mu.Lock()
		if len(q.jobs) > 0 {
			var out []*job
			var tier msg.Tier
			n := 0
			for len(q.jobs) > 0 {
				j := q.jobs[0]
				if len(out) > 0 && (n+j.keys() > max || j.missed || out[0].missed) {
					break // a retried unmatched request goes alone
				}
				if len(out) > 0 && j.app != out[0].app {
					break // a batch is one application's (Batch.app)
				}
				if j.tier != 0 {
					if tier != 0 && j.tier != tier {
						break
					}
					tier = j.tier
				}
				out = append(out, j)
				n += j.keys()
				q.jobs = q.jobs[1:]
			}
			q.keys -= n
			q.mu.Unlock()
			if tier == 0 {
				tier = msg.MAC
			}
			return out, tier, nil
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
}
