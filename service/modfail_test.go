package service

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/socket"
)

// dying is a module that dies (every call fails, as for a killed
// process) at its after-th Do call, mid-stream: what a kill -9 of a
// module does to the party in front of it.
type dying struct {
	*killable
	calls atomic.Int64
	after int64
}

func (d *dying) Do(ctx context.Context, calls []socket.Call, stop bool) ([]socket.Result, error) {
	if d.calls.Add(1) == d.after {
		d.dead.Store(true)
	}
	return d.killable.Do(ctx, calls, stop)
}

// TestModuleDeathLeavesNoShareAtOneSite: one site's module dies mid-stream
// and stays dead. Whatever the two parties had in flight, no request ends
// with a key share at one site and a refusal — or no answer at all — at
// the other: party 0 delivers a batch only with its confirmation on the
// way, and the confirmation reaches party 1 before the session is torn
// down (leader.flush), which waits for it (follower.serve) even after its
// own module failed the next batch.
func TestModuleDeathLeavesNoShareAtOneSite(t *testing.T) {
	const n = 480
	for _, victim := range []int{0, 1} {
		for _, after := range []int64{40, 90} {
			var d *dying
			s := faultySitesWith(t, func(c *Config) { c.MatchTimeout = time.Second },
				func(ss grpc.ServerStream) grpc.ServerStream { return ss },
				func(party int, m socket.Module) socket.Module {
					if party != victim {
						return m
					}
					d = &dying{killable: &killable{Module: m}, after: after}
					return d
				})
			p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 16}
			ws, reqs := boundRequests(p, 1, n, "otp", "mac", "batchmac")
			var got [2]map[uint64]*client.Reply
			done := make(chan int, 2)
			ctx, cancel := context.WithCancel(context.Background())
			for b := range 2 {
				st, err := s[b].app.Stream(ctx)
				if err != nil {
					t.Fatal(err)
				}
				go func() {
					for i := 0; i < n; i += 16 {
						if st.SendBatch(reqs[b][i:min(i+16, n)]) != nil {
							return
						}
					}
				}()
				got[b] = map[uint64]*client.Reply{}
				go func() { recvQuiet(st, n, 4*time.Second, got[b]); done <- b }()
			}
			<-done
			<-done
			cancel()
			if !d.dead.Load() {
				t.Fatalf("module %d never died (%d calls)", victim, d.calls.Load())
			}
			delivered, refused, none := 0, 0, 0
			only0, only1 := map[string]int{}, map[string]int{}
			for i := range n {
				id := uint64(i + 1)
				r0, r1 := got[0][id], got[1][id]
				switch {
				case r0 == nil && r1 == nil:
					none++
				case r0 == nil || r1 == nil:
					if r0 != nil {
						only0[classOf(r0.Err)]++
					} else {
						only1[classOf(r1.Err)]++
					}
					if (r0 != nil && r0.Err == nil) || (r1 != nil && r1.Err == nil) {
						t.Fatalf("module %d dead after %d calls: request %d has keys at one site and no answer at the other", victim, after, id)
					}
				case r0.Err == nil && r1.Err == nil:
					checkPair(t, r0.Shares[0].Key, r1.Shares[0].Key, ws[i].alpha, ws[i].beta)
					delivered++
				default:
					checkSpentBoth(t, r0, r1)
					refused++
				}
			}
			if delivered == 0 || delivered == n {
				t.Fatalf("module %d dead after %d calls: %d of %d delivered: the death did not fall mid-stream", victim, after, delivered, n)
			}
			t.Logf("module %d dead after %d calls: %d delivered at both sites, %d refused at both, %d unanswered at both; answered at site 0 only %v, site 1 only %v", victim, after, delivered, refused, none, only0, only1)
		}
	}
}

// recvQuiet receives st's replies into got until n have come or none has
// for quiet (requests a dead module left unanswered).
func recvQuiet(st *client.Stream, n int, quiet time.Duration, got map[uint64]*client.Reply) {
	type rr struct {
		r   *client.Reply
		err error
	}
	ch := make(chan rr, n+1)
	go func() {
		for {
			r, err := st.Recv()
			ch <- rr{r, err}
			if err != nil {
				return
			}
		}
	}()
	t := time.NewTimer(quiet)
	defer t.Stop()
	for len(got) < n {
		select {
		case x := <-ch:
			if x.err != nil {
				return
			}
			got[x.r.ID] = x.r
			t.Reset(quiet)
		case <-t.C:
			return
		}
	}
}

func classOf(err error) string {
	var re *client.ReplyError
	if errors.As(err, &re) {
		return re.Class
	}
	return fmt.Sprint(err)
}
