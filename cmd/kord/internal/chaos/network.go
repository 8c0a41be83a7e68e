// kord chaos network: a fault proxy between the parties while keys
// stream.

package chaos

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
)

// Network puts a fault proxy between the parties.
func Network(ctx context.Context, d time.Duration, seed uint64, appUnix bool, progress io.Writer) (*Report, error) {
	start := time.Now()
	fp := newFaultProxy(seed)
	defer fp.close() // after the cluster's removal too, if it failed to start
	c, err := cluster.Start(ctx, "", cluster.Options{Batch: 16, InFlight: 3, Journal: true, AppUnix: appUnix,
		MatchTimeout: time.Second, PeerTimeout: 2 * time.Second, PeerVia: fp.start})
	if err != nil {
		return nil, err
	}
	defer c.Remove()
	defer fp.close()
	l := newLoad(c, seed)
	rep := &Report{Test: "network"}
	fp.active.Store(true)
	end := time.Now().Add(d)
	// At least one round under faults, however late the clock starts.
	for rounds := 0; rounds == 0 || time.Now().Before(end); rounds++ {
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		err := l.round(rctx, 8+l.rng.IntN(40))
		cancel()
		if err != nil {
			return nil, err
		}
		if progress != nil {
			fmt.Fprintf(progress, "\r%d pairs verified, %d faults injected", l.verified, fp.faults.Load())
		}
	}
	// Heal: with the faults off the stream must work again.
	fp.active.Store(false)
	before := l.verified
	for i := 0; i < 3; i++ {
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		err := l.round(rctx, 32)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	if progress != nil {
		fmt.Fprintln(progress)
	}
	rep.Faults = int(fp.faults.Load())
	rep.finish(l, c, start)
	if l.verified-before < 96 {
		rep.Problems = append(rep.Problems, "the stream did not heal after the faults stopped")
		rep.OK = false
	}
	return rep, nil
}
