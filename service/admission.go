// Admission: the bound on keys a party holds queued and not yet answered,
// and (party 0) unique request ids per application.

package service

import (
	"fmt"
	"sync"
)

// admission bounds the keys a party holds queued and not yet answered and,
// at party 0, keeps the ids of those requests unique.
type admission struct {
	mu   sync.Mutex
	keys int
	max  int
	ids  map[rid]struct{} // nil: ids not tracked (party 1's pending set does it)
}

func newAdmission(max int, trackIDs bool) *admission {
	a := &admission{max: max}
	if trackIDs {
		a.ids = map[rid]struct{}{}
	}
	return a
}

// acquire admits j, or refuses it and changes nothing. An admitted job
// gives its share back when it is answered.
func (a *admission) acquire(j *job) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.acquireLocked(j)
}

// acquireAll admits each of js in order under one lock, as acquire does
// one at a time; errs[i] is nil for an admitted job. errs is nil when all
// were admitted.
func (a *admission) acquireAll(js []*job) (errs []error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, j := range js {
		if err := a.acquireLocked(j); err != nil {
			if errs == nil {
				errs = make([]error, len(js))
			}
			errs[i] = err
		}
	}
	return errs
}

func (a *admission) acquireLocked(j *job) error {
	n := j.weight()
	if n > a.max-a.keys {
		if _, dup := a.ids[rid{j.app, j.id}]; dup {
			return fmt.Errorf("%w: request %d is already pending at this site", errDupID, j.id)
		}
		if j.group > 1 {
			return fmt.Errorf("%w: request %d: %d keys of a %d-element payload count as %d, which would pass this party's limit of %d pending keys (--max-pending); %d are pending",
				errExhausted, j.id, j.keys(), j.group, n, a.max, a.keys)
		}
		return fmt.Errorf("%w: request %d: %d keys would pass this party's limit of %d pending keys (--max-pending); %d are pending",
			errExhausted, j.id, n, a.max, a.keys)
	}
	if a.ids != nil {
		// One map operation: a set that does not grow already held the id
		// (storing it again changes nothing).
		had := len(a.ids)
		if a.ids[rid{j.app, j.id}] = struct{}{}; len(a.ids) == had {
			return fmt.Errorf("%w: request %d is already pending at this site", errDupID, j.id)
		}
	}
	a.keys += n
	j.adm = a
	return nil
}

// release gives back what acquire took for j.
func (a *admission) release(j *job) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.keys -= j.weight()
	if a.ids != nil {
		delete(a.ids, rid{j.app, j.id})
	}
	j.adm = nil
}

func (a *admission) pending() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.keys
}
