// kord chaos rollback: a module state file restored from an older copy
// while the pair runs, and what the module and the parties make of it.

package chaos

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
)

// Rollback restores a module's state file from an older copy.
func Rollback(ctx context.Context, seed uint64, appUnix bool) (*Report, error) {
	start := time.Now()
	c, err := cluster.Start(ctx, "", cluster.Options{Batch: 16, InFlight: 2, Window: 8, Journal: true, AppUnix: appUnix,
		MatchTimeout: 2 * time.Second, PeerTimeout: 3 * time.Second})
	if err != nil {
		return nil, err
	}
	defer c.Remove()
	l := newLoad(c, seed)
	rep := &Report{Test: "rollback", Trials: 1}
	for i := 0; i < 3; i++ {
		if err := l.round(ctx, 32); err != nil {
			return nil, err
		}
	}
	// Snapshot module 0's state file (a stopped module: a consistent copy).
	c.KillModule(0)
	old, err := os.ReadFile(c.StatePath(0))
	if err != nil {
		return nil, err
	}
	if err := c.StartModule(ctx, 0); err != nil {
		return nil, err
	}
	for i := 0; i < 6; i++ {
		if err := l.round(ctx, 40); err != nil {
			return nil, err
		}
	}
	before, _, _ := moduleNext(ctx, c, 1)
	// Restore the old copy: the module must notice from its peer's witness.
	c.KillModule(0)
	if err := os.WriteFile(c.StatePath(0), old, 0o600); err != nil {
		return nil, err
	}
	if err := c.StartModule(ctx, 0); err != nil {
		return nil, err
	}
	for i := 0; i < 4; i++ {
		if err := l.round(ctx, 32); err != nil {
			return nil, err
		}
	}
	after, _, _ := moduleNext(ctx, c, 0)
	if after < before {
		rep.CounterRollbacks++
	}
	rep.RollbacksDetected = metric(c, 0, "kord_rollbacks_detected_total")
	if rep.RollbacksDetected == 0 {
		rep.Problems = append(rep.Problems, "the restored module did not detect the rollback")
	}
	rep.finish(l, c, start)
	return rep, nil
}

// metric reads an integer metric from party b's /metrics.
func metric(c *cluster.Cluster, b int, name string) int {
	addr := c.Party(b).Ready["metrics"]
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return -1
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
	body, _ := io.ReadAll(conn)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, name) {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			return int(v)
		}
	}
	return 0
}
