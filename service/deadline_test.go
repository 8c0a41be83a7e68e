package service

import (
	"context"
	"testing"
	"time"

	"github.com/kord-fss/kord/module/msg"
)

// jobClass returns the error class j was answered with ("" if none).
func jobClass(j *job) string {
	if !j.answered() || j.reply == nil {
		return ""
	}
	return j.reply.ErrorClass
}

// TestPendingExpiresWithoutSession: party 1 fails a pending request as
// unmatched after the match timeout while no session is up (party 0 may
// withhold its handshake for ever), and not before.
func TestPendingExpiresWithoutSession(t *testing.T) {
	p, _ := pendingJobs(t, 1, 2)
	timeout := 50 * time.Millisecond
	if n := p.expire(timeout, time.Time{}, timeout); n != 0 {
		t.Fatalf("%d requests failed before the match timeout", n)
	}
	old := p.jobs[rid{id: 1}]
	old.arrived = time.Now().Add(-2 * timeout)
	young := p.jobs[rid{id: 2}]
	if n := p.expire(timeout, time.Time{}, timeout); n != 1 {
		t.Fatalf("%d requests failed without a session, want 1", n)
	}
	if c := jobClass(old); c != ErrClassUnmatched {
		t.Fatalf("the expired request answered %q, want %q", c, ErrClassUnmatched)
	}
	if young.answered() || p.size() != 1 {
		t.Fatal("a request younger than the match timeout was failed")
	}
}

// TestPutBackRestartsMatchTimeoutOnce: a request returned to the pending
// set gets a fresh match timeout once; returned again (a peer that has it
// claimed and refused without end), it keeps its timeout and expires.
func TestPutBackRestartsMatchTimeoutOnce(t *testing.T) {
	p, items := pendingJobs(t, 7)
	timeout := 50 * time.Millisecond
	claim := func() *job {
		t.Helper()
		js, missing, differ := p.claim(context.Background(), "", items, msg.MAC, time.Now())
		if len(js) != 1 || len(missing)+len(differ) > 0 {
			t.Fatalf("claim: %d jobs, missing %v, differ %v", len(js), missing, differ)
		}
		return js[0]
	}
	j := claim()
	j.arrived = time.Now().Add(-2 * timeout)
	p.putBack([]*job{j})
	if n := p.expire(timeout, time.Time{}, timeout); n != 0 {
		t.Fatal("a request put back for the first time kept its old match timeout")
	}
	j = claim()
	j.arrived = time.Now().Add(-2 * timeout)
	p.putBack([]*job{j})
	if n := p.expire(timeout, time.Time{}, timeout); n != 1 || jobClass(j) != ErrClassUnmatched {
		t.Fatalf("a request put back twice did not expire (%d failed, class %q)", n, jobClass(j))
	}
}

// TestQueueExpire: party 0's queue gives up, in order, the requests that
// arrived before a time, and keeps the others queued.
func TestQueueExpire(t *testing.T) {
	q := newQueue()
	var js []*job
	for id := range uint64(3) {
		j, err := newJob(derivedReq(id+1, 1))
		if err != nil {
			t.Fatal(err)
		}
		js = append(js, j)
	}
	q.pushAll(js)
	js[0].arrived = time.Now().Add(-time.Second)
	js[2].arrived = time.Now().Add(-time.Second)
	gone := q.expire(time.Now().Add(-time.Millisecond))
	if len(gone) != 2 || gone[0] != js[0] || gone[1] != js[2] || q.size() != 1 {
		t.Fatalf("expired %d requests (queue left %d), want ids 1 and 3", len(gone), q.size())
	}
	if q.keys != js[1].keys() {
		t.Fatalf("the queue counts %d keys, holds %d", q.keys, js[1].keys())
	}
}
