// kord chaos soak: a sustained stream, with memory watched.

package chaos

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
)

// Soak streams for d and reports keys/s and each process's RSS.
func Soak(ctx context.Context, d time.Duration, seed uint64, appUnix bool, progress io.Writer) (*Report, error) {
	start := time.Now()
	c, err := cluster.Start(ctx, "", cluster.Options{AppUnix: appUnix})
	if err != nil {
		return nil, err
	}
	defer c.Remove()
	l := newLoad(c, seed)
	rep := &Report{Test: "soak", RSSMiB: map[string]float64{}}
	end := time.Now().Add(d)
	t0 := time.Now()
	for rounds := 0; rounds == 0 || time.Now().Before(end); rounds++ { // a rate from at least one round
		if err := l.round(ctx, 2000); err != nil {
			return nil, err
		}
		if progress != nil {
			fmt.Fprintf(progress, "\r%d pairs verified, %.0f keys/s", l.verified, float64(l.verified)/time.Since(t0).Seconds())
		}
	}
	rep.KeysPerSec = float64(l.verified) / time.Since(t0).Seconds()
	for _, p := range []*cluster.Daemon{c.Module(0), c.Module(1), c.Party(0), c.Party(1)} {
		rep.RSSMiB[p.Name] = rssMiB(p.Pid())
	}
	if progress != nil {
		fmt.Fprintln(progress)
	}
	rep.finish(l, c, start)
	return rep, nil
}

func rssMiB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
