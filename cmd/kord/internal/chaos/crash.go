// kord chaos crash: kill -9 of modules, parties, a whole site or both
// parties, and recovery checked pair by pair.

package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
)

// moduleNext asks party b for its module's next counter.
func moduleNext(ctx context.Context, c *cluster.Cluster, b int) (uint64, bool, error) {
	st, err := c.App(b).Status(ctx)
	if err != nil {
		return 0, false, err
	}
	if st.Module == nil {
		return 0, false, errors.New("module unreachable")
	}
	return st.Module.NextCounter, st.Module.Locked, nil
}

// Crash kill -9s a daemon (which: modules, parties or all four), a whole
// site (site: its module and party together, site 0 or 1 at random) or
// both parties (both-parties) at random points of a stream and restarts
// what it killed; the application at a killed party's site resends what
// it has no answer for. It reports orphaned shares, shares voided after
// delivery and, per kind killed, the time from the restart to the first
// new pair.
func Crash(ctx context.Context, trials int, which string, seed uint64, appUnix bool, progress io.Writer) (*Report, error) {
	var victims []string
	switch which {
	case "all":
		victims = []string{"module0", "module1", "party0", "party1"}
	case "modules":
		victims = []string{"module0", "module1"}
	case "parties":
		victims = []string{"party0", "party1"}
	case "site":
		victims = []string{"site0", "site1"}
	case "both-parties":
		victims = []string{"both-parties"}
	default:
		return nil, fmt.Errorf("kill %q: want all, modules, parties, site or both-parties", which)
	}
	start := time.Now()
	c, err := cluster.Start(ctx, "", cluster.Options{Batch: 16, InFlight: 2, Window: 32, Journal: true, AppUnix: appUnix,
		MatchTimeout: 2 * time.Second, PeerTimeout: 3 * time.Second})
	if err != nil {
		return nil, err
	}
	defer c.Remove()
	rng := mrand.New(mrand.NewPCG(seed, 1))
	l := newLoad(c, seed)
	rep := &Report{Test: "crash", Trials: trials, Kills: map[string]int{}, RecoveryMs: map[string]Dist{}}
	recovery := map[string][]float64{}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var rounds atomic.Int64
	loadErr := make(chan error, 1)
	go func() {
		for sctx.Err() == nil {
			rctx, rc := context.WithTimeout(sctx, 60*time.Second)
			err := l.round(rctx, 8+l.rng.IntN(40))
			rc()
			if err != nil && sctx.Err() == nil {
				loadErr <- err
				return
			}
			rounds.Add(1)
		}
		loadErr <- nil
	}()
	var lastNext [2]uint64
	for t := 0; t < trials; t++ {
		time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
		victim := victims[rng.IntN(len(victims))]
		if err := kill(ctx, c, victim, rep); err != nil {
			return nil, err
		}
		restarted := time.Now()
		rep.Kills[victim]++
		// The stream must resume: wait for two more completed rounds.
		want := rounds.Load() + 2
		deadline := time.Now().Add(60 * time.Second)
		for rounds.Load() < want {
			select {
			case err := <-loadErr:
				if err == nil {
					err = errors.New("load stopped")
				}
				return nil, fmt.Errorf("trial %d: stream failed: %w", t, err)
			case <-time.After(5 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("trial %d: stream did not resume after restarting %s", t, victim)
			}
		}
		l.mu.Lock()
		first := time.Time{}
		for _, at := range l.pairsAt {
			if at.After(restarted) && (first.IsZero() || at.Before(first)) {
				first = at
			}
		}
		l.pairsAt = l.pairsAt[:0]
		l.mu.Unlock()
		if !first.IsZero() {
			recovery[victim] = append(recovery[victim], float64(first.Sub(restarted).Microseconds())/1000)
		}
		for p := 0; p < 2; p++ {
			n, _, err := moduleNext(ctx, c, p)
			if err != nil {
				continue
			}
			if n < lastNext[p] {
				rep.CounterRollbacks++
			}
			lastNext[p] = n
		}
		if progress != nil {
			fmt.Fprintf(progress, "\rtrial %d/%d: killed %s; %d pairs verified", t+1, trials, victim, l.verified)
		}
	}
	if progress != nil {
		fmt.Fprintln(progress)
	}
	cancel()
	<-loadErr
	for v, ms := range recovery {
		rep.RecoveryMs[v] = distOf(ms)
	}
	// Rollback warnings the crashes raised: nothing was rolled back, so
	// any is a false alarm (the witness judges by what the peer accepted,
	// which a crashed module never resumes below). The metric of a party
	// restarted since starts from zero: a lower bound.
	for b := 0; b < 2; b++ {
		if n := metric(c, b, "kord_rollbacks_detected_total"); n > 0 {
			rep.RollbacksDetected += n
		}
	}
	rep.finish(l, c, start)
	if rep.RollbacksDetected > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d rollbacks detected, but no state file was restored", rep.RollbacksDetected))
		rep.OK = false
	}
	return rep, nil
}

// kill kill -9s victim (a daemon, a site or both parties) and restarts
// it: a site's module before its party, as a node's restart would.
func kill(ctx context.Context, c *cluster.Cluster, victim string, rep *Report) error {
	var mods, parties []int
	switch victim {
	case "both-parties":
		parties = []int{0, 1}
	default:
		b := int(victim[len(victim)-1] - '0')
		switch victim[0] {
		case 'm':
			mods = []int{b}
		case 'p':
			parties = []int{b}
		case 's':
			mods, parties = []int{b}, []int{b}
		}
	}
	if slices.Contains(parties, 0) { // party 0's counters go with it
		if st, err := c.App(0).Status(ctx); err == nil {
			rep.Resyncs += st.Resyncs
		}
	}
	old := make([]*cluster.Daemon, len(parties))
	for i, b := range parties {
		old[i] = c.KillParty(b)
	}
	for _, b := range mods {
		c.KillModule(b)
	}
	for _, b := range mods {
		if err := c.StartModule(ctx, b); err != nil {
			return err
		}
	}
	for i, b := range parties {
		if err := c.RestartParty(ctx, b, old[i]); err != nil {
			return err
		}
	}
	return nil
}
