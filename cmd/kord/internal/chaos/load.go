// The load of every fault run: both applications' streams, resent after a
// fault, and each pair's outcome at both sites.

package chaos

import (
	"context"
	"errors"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/cmd/kord/internal/loadgen"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// load streams rounds of bound keys through both sites and checks
// every delivered pair. A refused request (an error reply) is counted, a
// mismatched pair is a failure. A site whose stream breaks (its party was
// killed) resends the requests it has no answer for once it can open a
// stream again (docs/operations.md, Recovery).
type load struct {
	c                             *cluster.Cluster
	rng                           *mrand.Rand
	mu                            sync.Mutex
	id                            uint64
	verified, mismatched, refused int
	oneSided                      int // keys at one site, a refusal or nothing at the other
	voidedAfter                   int // keys an application got, then a void notice for
	maxCounter                    uint64
	pairsAt                       []time.Time // when each verified pair was complete at both sites
	handed0                       uint64      // client.HandedMessages at the start
}

// newLoad is a load on c, its random choices from seed.
func newLoad(c *cluster.Cluster, seed uint64) *load {
	return &load{c: c, rng: mrand.New(mrand.NewPCG(seed, 2)), id: 1, handed0: client.HandedMessages()}
}

// round streams n keys of one class; it returns when every reply arrived.
func (l *load) round(ctx context.Context, n int) error {
	l.mu.Lock()
	k := classes[l.rng.IntN(len(classes))]
	reqs, truth := loadgen.Requests(k, l.id, n, l.rng)
	l.id += uint64(len(reqs[0]))
	l.mu.Unlock()
	reps, at, err := l.stream(ctx, reqs)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, t := range truth {
		r0, r1 := reps[0][i], reps[1][i]
		// A refusal by a party is counted as refused; a key that does not
		// parse fails loadgen.Verify (mismatched).
		if refusal(r0) || refusal(r1) {
			l.refused++
			if !refusal(r0) || !refusal(r1) {
				// One site got keys and the other a refusal: those keys
				// have no pair, which the parties promise never happens.
				l.oneSided++
			}
			continue
		}
		ok, bad := loadgen.Verify(k, t, r0, r1, l.rng)
		l.verified += ok
		l.mismatched += bad
		if ok > 0 {
			l.pairsAt = append(l.pairsAt, maxTime(at[0][i], at[1][i]))
		}
		for _, s := range r0.Shares {
			l.maxCounter = max(l.maxCounter, s.Counter)
		}
	}
	return nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// stream sends reqs[b] to site b and returns each request's answer and
// when it came. When a site's stream breaks, the requests it has no
// answer for are sent again on a new stream (to the restarted party)
// until ctx ends.
func (l *load) stream(ctx context.Context, reqs [2][]*pb.KeyRequest) (reps [2][]*client.Reply, at [2][]time.Time, err error) {
	var wg, answered sync.WaitGroup
	var errs [2]error
	// settle: each site's last stream stays open, reading void notices,
	// until it is closed: right away when every id got keys at both sites
	// or a refusal at both, else once the notices came or voidGrace passed.
	settle := make(chan struct{})
	var settleOnce sync.Once
	defer settleOnce.Do(func() { close(settle) })
	for b := 0; b < 2; b++ {
		n := len(reqs[b])
		reps[b], at[b] = make([]*client.Reply, n), make([]time.Time, n)
		pos := make(map[uint64]int, n)
		for i, r := range reqs[b] {
			pos[r.Id] = i
		}
		wg.Add(1)
		answered.Add(1)
		go func() {
			defer wg.Done()
			once := sync.OnceFunc(answered.Done)
			defer once()
			for ctx.Err() == nil {
				var todo []*pb.KeyRequest
				l.mu.Lock()
				for i, r := range reqs[b] {
					if reps[b][i] == nil {
						todo = append(todo, r)
					}
				}
				l.mu.Unlock()
				if len(todo) == 0 {
					return
				}
				if err := l.streamOnce(ctx, b, todo, pos, reps[b], at[b], once, settle); err != nil {
					select { // the party is down: try again shortly
					case <-time.After(10 * time.Millisecond):
					case <-ctx.Done():
					}
				}
			}
			errs[b] = ctx.Err()
		}()
	}
	answered.Wait()
	for deadline := time.Now().Add(voidGrace); time.Now().Before(deadline) && ctx.Err() == nil; {
		l.mu.Lock()
		n := oneSided(reps)
		l.mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	settleOnce.Do(func() { close(settle) })
	wg.Wait()
	return reps, at, errors.Join(errs[0], errs[1])
}

// oneSided counts ids answered with keys at one site and a refusal (or
// nothing) at the other; l.mu held.
func oneSided(reps [2][]*client.Reply) int {
	n := 0
	for i := range reps[0] {
		r0, r1 := reps[0][i], reps[1][i]
		if r0 == nil || r1 == nil || refusal(r0) != refusal(r1) {
			n++
		}
	}
	return n
}

// streamOnce sends todo on one stream of site b and records the answers;
// once every id has one it calls answered and reads on (void notices)
// until settle is closed.
func (l *load) streamOnce(ctx context.Context, b int, todo []*pb.KeyRequest, pos map[uint64]int, reps []*client.Reply, at []time.Time,
	answered func(), settle <-chan struct{}) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := l.c.App(b).Stream(sctx)
	if err != nil {
		return err
	}
	go func() {
		for i := 0; i < len(todo); i += 64 {
			if st.SendBatch(todo[i:min(i+64, len(todo))]) != nil {
				return
			}
		}
		// No CloseSend: the stream stays open for void notices (settle).
	}()
	go func() {
		<-settle
		cancel()
	}()
	for left := len(todo); ; {
		r, err := st.Recv()
		if err != nil {
			if left == 0 {
				return nil
			}
			return err
		}
		i, ok := pos[r.ID]
		l.mu.Lock()
		switch {
		case !ok:
		case reps[i] == nil:
			reps[i], at[i] = r, time.Now()
			left--
		case isVoid(r):
			// A void notice: the keys this site got for the id are void
			// (the other site could not complete the pair after a restart).
			if !refusal(reps[i]) {
				l.voidedAfter++
			}
			reps[i] = r
		}
		l.mu.Unlock()
		if left == 0 {
			answered()
		}
	}
}

func isVoid(r *client.Reply) bool {
	var re *client.ReplyError
	return errors.As(r.Err, &re) && re.Class == pb.ClassVoid
}

// refusal reports whether a party refused the request (not a reply whose
// key failed to parse).
func refusal(r *client.Reply) bool {
	var re *client.ReplyError
	return errors.As(r.Err, &re)
}
