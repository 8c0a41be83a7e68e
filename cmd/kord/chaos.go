package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

func init() { rootCmd.AddCommand(chaosCmd()) }

// chaosReport is the JSON result of a fault run.
type chaosReport struct {
	Test               string             `json:"test"`
	Trials             int                `json:"trials,omitempty"`
	PairsVerified      int                `json:"pairs_verified"`
	PairsMismatched    int                `json:"pairs_mismatched"`
	OneSided           int                `json:"one_sided_deliveries"`
	Refused            int                `json:"requests_refused"`
	PositionsUsed      [2]int             `json:"keystream_positions_used"`
	PositionsReused    [2]int             `json:"keystream_positions_reused"`
	CounterRollbacks   int                `json:"counter_rollbacks"`
	RollbacksDetected  int                `json:"rollbacks_detected,omitempty"`
	LockedAfterRestore bool               `json:"locked_after_restore,omitempty"`
	Resyncs            uint64             `json:"resyncs"`
	Faults             int                `json:"faults_injected,omitempty"`
	KeysPerSec         float64            `json:"keys_per_sec,omitempty"`
	RSSMiB             map[string]float64 `json:"rss_mib,omitempty"`
	Seconds            float64            `json:"seconds"`
	OK                 bool               `json:"ok"`
	Problems           []string           `json:"problems,omitempty"`
}

// chaosLoad streams rounds of bound keys through both sites and checks
// every delivered pair. A refused request (an error reply) is counted, a
// mismatched pair is a failure.
type chaosLoad struct {
	c                             *svcCluster
	rng                           *mrand.Rand
	mu                            sync.Mutex
	id                            uint64
	verified, mismatched, refused int
	oneSided                      int // keys at one site, a refusal at the other
	maxCounter                    uint64
}

var chaosClasses = []svcClass{
	{mode: "bound", tier: "otp", typ: fss.DPF, l: 16, n: 16},
	{mode: "bound", tier: "mac", typ: fss.DCF, l: 16, n: 8},
	{mode: "bound", tier: "batchmac", typ: fss.DPF, l: 32, n: 32},
	{mode: "derived", typ: fss.DCF, l: 16, n: 16},
}

// round streams n keys of one class; it returns when every reply arrived.
func (l *chaosLoad) round(ctx context.Context, n int) error {
	l.mu.Lock()
	k := chaosClasses[l.rng.IntN(len(chaosClasses))]
	reqs, truth := svcRequests(k, l.id, n, l.rng)
	l.id += uint64(len(reqs[0]))
	l.mu.Unlock()
	reps, _, err := svcStream(ctx, l.c.apps, reqs)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, t := range truth {
		r0, r1 := reps[0][i], reps[1][i]
		// A refusal by a party is counted as refused; a key that does not
		// parse fails svcVerify (mismatched).
		if refusal(r0) || refusal(r1) {
			l.refused++
			if !refusal(r0) || !refusal(r1) {
				// One site got keys and the other a refusal: those keys
				// have no pair, which the parties promise never happens.
				l.oneSided++
			}
			continue
		}
		ok, bad := svcVerify(k, t, r0, r1, l.rng)
		l.verified += ok
		l.mismatched += bad
		for _, s := range r0.Shares {
			l.maxCounter = max(l.maxCounter, s.Counter)
		}
	}
	return nil
}

// refusal reports whether a party refused the request (not a reply whose
// key failed to parse).
func refusal(r *client.Reply) bool {
	var re *client.ReplyError
	return errors.As(r.Err, &re)
}

// positions reads a module journal and counts positions and repeats.
func positions(path string) (used, reused int, err error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, 0, nil
		}
		return 0, 0, err
	}
	defer f.Close()
	seen := map[uint64]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		c, err := strconv.ParseUint(strings.TrimSpace(sc.Text()), 10, 64)
		if err != nil {
			continue // a line cut by kill -9
		}
		if seen[c] {
			reused++
		}
		seen[c] = true
		used++
	}
	return used, reused, sc.Err()
}

func (r *chaosReport) finish(l *chaosLoad, c *svcCluster, start time.Time) {
	r.PairsVerified, r.PairsMismatched, r.Refused, r.OneSided = l.verified, l.mismatched, l.refused, l.oneSided
	for b := 0; b < 2; b++ {
		u, re, err := positions(c.JournalPath(b))
		if err != nil {
			r.Problems = append(r.Problems, err.Error())
		}
		r.PositionsUsed[b], r.PositionsReused[b] = u, re
	}
	if st, err := c.apps[0].Status(context.Background()); err == nil {
		r.Resyncs = st.Resyncs
	}
	r.Seconds = time.Since(start).Seconds()
	if r.PairsMismatched > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d mismatched pairs delivered", r.PairsMismatched))
	}
	if r.OneSided > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d requests got keys at one site and a refusal at the other", r.OneSided))
	}
	if r.PositionsReused[0]+r.PositionsReused[1] > 0 {
		r.Problems = append(r.Problems, "a keystream position was used twice")
	}
	if r.CounterRollbacks > 0 {
		r.Problems = append(r.Problems, "a module's counter went back")
	}
	if r.PairsVerified == 0 {
		r.Problems = append(r.Problems, "no key pair was delivered")
	}
	r.OK = len(r.Problems) == 0
}

// moduleNext asks party b for its module's next counter.
func moduleNext(ctx context.Context, c *svcCluster, b int) (uint64, bool, error) {
	st, err := c.apps[b].Status(ctx)
	if err != nil {
		return 0, false, err
	}
	if st.Module == nil {
		return 0, false, errors.New("module unreachable")
	}
	return st.Module.NextCounter, st.Module.Locked, nil
}

// chaosCrash kill -9s a module at random points of a stream and restarts it.
func chaosCrash(ctx context.Context, trials int, seed uint64, progress io.Writer) (*chaosReport, error) {
	start := time.Now()
	c, err := startCluster(ctx, "", clusterOpts{Batch: 16, InFlight: 2, Window: 32, Journal: true,
		MatchTimeout: 2 * time.Second, PeerTimeout: 3 * time.Second})
	if err != nil {
		return nil, err
	}
	defer c.Remove()
	rng := mrand.New(mrand.NewPCG(seed, 1))
	l := &chaosLoad{c: c, rng: mrand.New(mrand.NewPCG(seed, 2)), id: 1}
	rep := &chaosReport{Test: "crash", Trials: trials}
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
		b := rng.IntN(2)
		c.KillModule(b)
		if err := c.StartModule(ctx, b); err != nil {
			return nil, err
		}
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
				return nil, fmt.Errorf("trial %d: stream did not resume after restarting module %d", t, b)
			}
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
			fmt.Fprintf(progress, "\rtrial %d/%d: killed module %d; %d pairs verified", t+1, trials, b, l.verified)
		}
	}
	if progress != nil {
		fmt.Fprintln(progress)
	}
	cancel()
	<-loadErr
	rep.finish(l, c, start)
	return rep, nil
}

// chaosRollback restores a module's state file from an older copy.
func chaosRollback(ctx context.Context, seed uint64) (*chaosReport, error) {
	start := time.Now()
	c, err := startCluster(ctx, "", clusterOpts{Batch: 16, InFlight: 2, Window: 8, Journal: true,
		MatchTimeout: 2 * time.Second, PeerTimeout: 3 * time.Second})
	if err != nil {
		return nil, err
	}
	defer c.Remove()
	l := &chaosLoad{c: c, rng: mrand.New(mrand.NewPCG(seed, 2)), id: 1}
	rep := &chaosReport{Test: "rollback", Trials: 1}
	for i := 0; i < 3; i++ {
		if err := l.round(ctx, 32); err != nil {
			return nil, err
		}
	}
	// Snapshot module 0's state file (a stopped module: a consistent copy).
	c.KillModule(0)
	old, err := os.ReadFile(c.statePath(0))
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
	if err := os.WriteFile(c.statePath(0), old, 0o600); err != nil {
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
	rep.RollbacksDetected = chaosMetric(c, 0, "kord_rollbacks_detected_total")
	if rep.RollbacksDetected == 0 {
		rep.Problems = append(rep.Problems, "the restored module did not detect the rollback")
	}
	rep.finish(l, c, start)
	return rep, nil
}

// chaosMetric reads an integer metric from party b's /metrics.
func chaosMetric(c *svcCluster, b int, name string) int {
	addr := c.parties[b].ready["metrics"]
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

// chaosNetwork puts a fault proxy between the parties.
func chaosNetwork(ctx context.Context, d time.Duration, seed uint64, progress io.Writer) (*chaosReport, error) {
	start := time.Now()
	fp := &faultProxy{rng: mrand.New(mrand.NewPCG(seed, 3))}
	c, err := startCluster(ctx, "", clusterOpts{Batch: 16, InFlight: 3, Journal: true,
		MatchTimeout: time.Second, PeerTimeout: 2 * time.Second, PeerVia: fp.start})
	if err != nil {
		return nil, err
	}
	defer c.Remove()
	defer fp.close()
	l := &chaosLoad{c: c, rng: mrand.New(mrand.NewPCG(seed, 2)), id: 1}
	rep := &chaosReport{Test: "network"}
	fp.active.Store(true)
	end := time.Now().Add(d)
	for time.Now().Before(end) {
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

// chaosSoak streams for d and reports keys/s and each process's RSS.
func chaosSoak(ctx context.Context, d time.Duration, seed uint64, progress io.Writer) (*chaosReport, error) {
	start := time.Now()
	c, err := startCluster(ctx, "", clusterOpts{})
	if err != nil {
		return nil, err
	}
	defer c.Remove()
	l := &chaosLoad{c: c, rng: mrand.New(mrand.NewPCG(seed, 2)), id: 1}
	rep := &chaosReport{Test: "soak", RSSMiB: map[string]float64{}}
	end := time.Now().Add(d)
	t0 := time.Now()
	for time.Now().Before(end) {
		if err := l.round(ctx, 2000); err != nil {
			return nil, err
		}
		if progress != nil {
			fmt.Fprintf(progress, "\r%d pairs verified, %.0f keys/s", l.verified, float64(l.verified)/time.Since(t0).Seconds())
		}
	}
	rep.KeysPerSec = float64(l.verified) / time.Since(t0).Seconds()
	for _, p := range []*svcProc{c.mods[0], c.mods[1], c.parties[0], c.parties[1]} {
		rep.RSSMiB[p.name] = rssMiB(p.cmd.Process.Pid)
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

func chaosCmd() *cobra.Command {
	var (
		trials   int
		duration time.Duration
		seed     uint64
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "chaos crash|rollback|network|soak",
		Short: "Fault tests against real module and party processes",
		Long: `kord chaos runs two modules and two parties as child processes (peer link
with mutual TLS, certificates made for the run) and attacks them:

  crash     kill -9 a module at random points of a stream and restart it
            (--trials, 20 in CI, 200 for the long run); checks no counter
            rollback, no keystream position used twice (module journals), no
            mismatched pair delivered, and that the stream resumes
  rollback  restore a module's state file from an older copy; the module must
            detect it from its peer's witness and resynchronise forward
  network   a fault proxy between the parties that delays, partitions, resets
            and corrupts the peer connection (--duration); checks no
            mismatched pair and that the stream heals
  soak      a sustained stream for --duration reporting keys/s and RSS

Exit status 1 if any check fails.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"crash", "rollback", "network", "soak"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if seed == 0 {
				seed = uint64(time.Now().UnixNano())
			}
			var progress io.Writer
			if !asJSON {
				progress = cmd.ErrOrStderr()
			}
			ctx := cmd.Context()
			var rep *chaosReport
			var err error
			switch args[0] {
			case "crash":
				if trials < 1 {
					return badInput("--trials must be at least 1")
				}
				rep, err = chaosCrash(ctx, trials, seed, progress)
			case "rollback":
				rep, err = chaosRollback(ctx, seed)
			case "network":
				rep, err = chaosNetwork(ctx, duration, seed, progress)
			case "soak":
				rep, err = chaosSoak(ctx, duration, seed, progress)
			default:
				return badInput("unknown test %q (want crash, rollback, network or soak)", args[0])
			}
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				return err
			}
			if !rep.OK {
				return fmt.Errorf("chaos %s: %s", args[0], strings.Join(rep.Problems, "; "))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&trials, "trials", 20, "crash: number of kill -9 trials")
	f.DurationVar(&duration, "duration", 10*time.Second, "network, soak: how long")
	f.Uint64Var(&seed, "seed", 0, "random seed (0 = from the clock)")
	f.BoolVar(&asJSON, "json", false, "no progress on stderr")
	return cmd
}

// faultProxy forwards party 0's peer connections to party 1 and, while
// active, injects faults: delays, partitions (every connection cut and new
// ones refused for a while), resets, and corrupted or duplicated chunks
// (which TLS detects on the default mutually authenticated link, as the
// HTTP/2 framing would on a plaintext one, ending the connection).
type faultProxy struct {
	rng    *mrand.Rand
	rmu    sync.Mutex
	l      net.Listener
	target string
	active atomic.Bool
	faults atomic.Int64
	mu     sync.Mutex
	conns  map[net.Conn]bool
	until  time.Time // partitioned until
}

func (f *faultProxy) roll(n int) int {
	f.rmu.Lock()
	defer f.rmu.Unlock()
	return f.rng.IntN(n)
}

func (f *faultProxy) start(target string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	f.l, f.target, f.conns = l, target, map[net.Conn]bool{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go f.serve(c)
		}
	}()
	go f.chaos()
	return l.Addr().String(), nil
}

func (f *faultProxy) close() {
	f.l.Close()
	f.cutAll()
}

func (f *faultProxy) cutAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		c.Close()
	}
	clear(f.conns)
}

// chaos partitions the link now and then.
func (f *faultProxy) chaos() {
	for {
		time.Sleep(time.Duration(200+f.roll(400)) * time.Millisecond)
		if f.l == nil {
			return
		}
		if !f.active.Load() {
			continue
		}
		if f.roll(3) == 0 {
			f.faults.Add(1)
			f.mu.Lock()
			f.until = time.Now().Add(time.Duration(50+f.roll(300)) * time.Millisecond)
			f.mu.Unlock()
			f.cutAll()
		}
	}
}

func (f *faultProxy) serve(c net.Conn) {
	f.mu.Lock()
	part := time.Now().Before(f.until)
	f.mu.Unlock()
	if part {
		c.Close()
		return
	}
	up, err := net.Dial("tcp", f.target)
	if err != nil {
		c.Close()
		return
	}
	f.mu.Lock()
	f.conns[c], f.conns[up] = true, true
	f.mu.Unlock()
	go f.pipe(up, c)
	f.pipe(c, up)
}

func (f *faultProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		chunk := buf[:n]
		if f.active.Load() {
			switch r := f.roll(200); {
			case r < 8: // delay
				f.faults.Add(1)
				time.Sleep(time.Duration(1+f.roll(40)) * time.Millisecond)
			case r == 8: // reset: drop what is in flight
				f.faults.Add(1)
				return
			case r == 9: // duplicate the chunk
				f.faults.Add(1)
				if _, err := dst.Write(chunk); err != nil {
					return
				}
			case r == 10: // corrupt a byte
				f.faults.Add(1)
				chunk = append([]byte(nil), chunk...)
				chunk[f.roll(len(chunk))] ^= 0x55
			}
		}
		if _, err := dst.Write(chunk); err != nil {
			return
		}
	}
}

var _ = pb.KeyRequest{}
