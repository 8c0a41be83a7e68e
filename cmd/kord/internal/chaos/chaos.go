// Package chaos attacks a kord deployment of real processes (a
// cluster.Cluster) while a load streams keys through it, and checks what
// the application receives: kill -9 of modules and parties and their
// restart (Crash), a module state file restored from an older copy
// (Rollback), a fault proxy on the parties' peer link (Network), and a
// sustained stream (Soak). Each returns a Report whose OK says whether
// every check held; kord chaos prints it.
package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/cmd/kord/internal/loadgen"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Report is the JSON result of a fault run.
type Report struct {
	Test            string `json:"test"`
	Trials          int    `json:"trials,omitempty"`
	PairsVerified   int    `json:"pairs_verified"`
	PairsMismatched int    `json:"pairs_mismatched"`
	OneSided        int    `json:"one_sided_deliveries"`
	// OrphanedShares: requests whose key share reached the application at
	// one site and whose partner never reached the other (a refusal, or
	// no answer at all after every resend); must be 0.
	OrphanedShares int `json:"orphaned_shares"`
	// VoidedAfterDelivery: key shares an application received and later
	// got a void notice for (the other site could not complete the pair
	// after a restart): not orphaned, but not usable.
	VoidedAfterDelivery int `json:"voided_after_delivery"`
	// Kills counts the kill -9s per kind killed (crash): a daemon
	// (module0 … party1), a whole site (site0, site1: its module and
	// party together) or both parties (both-parties).
	Kills map[string]int `json:"kills,omitempty"`
	// RecoveryMs: per kind killed, the time from the restart (the
	// processes ready) to the first new pair delivered at both sites, in
	// milliseconds (crash).
	RecoveryMs         map[string]Dist    `json:"recovery_ms,omitempty"`
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

// Dist is a distribution of durations in milliseconds.
type Dist struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	Max    float64 `json:"max"`
}

func distOf(ms []float64) Dist {
	if len(ms) == 0 {
		return Dist{}
	}
	s := append([]float64(nil), ms...)
	sort.Float64s(s)
	q := func(f float64) float64 { return s[min(len(s)-1, int(f*float64(len(s))))] }
	return Dist{N: len(s), Median: q(0.5), P90: q(0.9), Max: s[len(s)-1]}
}

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
}

var classes = []loadgen.Class{
	{Mode: msg.Bound, Tier: msg.Keystream, Type: fss.DPF, InBits: 16, OutBits: 16},
	{Mode: msg.Bound, Tier: msg.MAC, Type: fss.DCF, InBits: 16, OutBits: 8},
	{Mode: msg.Bound, Tier: msg.BatchMAC, Type: fss.DPF, InBits: 32, OutBits: 32},
	{Mode: msg.Derived, Type: fss.DCF, InBits: 16, OutBits: 16},
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

// voidGrace is how long a round waits for the void notices of ids that
// got keys at one site and a refusal at the other (a notice rides on the
// next batch between the parties).
const voidGrace = 3 * time.Second

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

func (r *Report) finish(l *load, c *cluster.Cluster, start time.Time) {
	r.PairsVerified, r.PairsMismatched, r.Refused, r.OneSided = l.verified, l.mismatched, l.refused, l.oneSided
	r.OrphanedShares, r.VoidedAfterDelivery = l.oneSided, l.voidedAfter
	for b := 0; b < 2; b++ {
		u, re, err := positions(c.JournalPath(b))
		if err != nil {
			r.Problems = append(r.Problems, err.Error())
		}
		r.PositionsUsed[b], r.PositionsReused[b] = u, re
	}
	if st, err := c.App(0).Status(context.Background()); err == nil {
		r.Resyncs += st.Resyncs // (crash: plus those of party 0's earlier runs)
	}
	r.Seconds = time.Since(start).Seconds()
	if r.PairsMismatched > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d mismatched pairs delivered", r.PairsMismatched))
	}
	if r.OneSided > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d orphaned shares: requests got keys at one site and a refusal at the other", r.OneSided))
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
func Crash(ctx context.Context, trials int, which string, seed uint64, progress io.Writer) (*Report, error) {
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
	c, err := cluster.Start(ctx, "", cluster.Options{Batch: 16, InFlight: 2, Window: 32, Journal: true,
		MatchTimeout: 2 * time.Second, PeerTimeout: 3 * time.Second})
	if err != nil {
		return nil, err
	}
	defer c.Remove()
	rng := mrand.New(mrand.NewPCG(seed, 1))
	l := &load{c: c, rng: mrand.New(mrand.NewPCG(seed, 2)), id: 1}
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

// Rollback restores a module's state file from an older copy.
func Rollback(ctx context.Context, seed uint64) (*Report, error) {
	start := time.Now()
	c, err := cluster.Start(ctx, "", cluster.Options{Batch: 16, InFlight: 2, Window: 8, Journal: true,
		MatchTimeout: 2 * time.Second, PeerTimeout: 3 * time.Second})
	if err != nil {
		return nil, err
	}
	defer c.Remove()
	l := &load{c: c, rng: mrand.New(mrand.NewPCG(seed, 2)), id: 1}
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

// Network puts a fault proxy between the parties.
func Network(ctx context.Context, d time.Duration, seed uint64, progress io.Writer) (*Report, error) {
	start := time.Now()
	fp := newFaultProxy(seed)
	defer fp.close() // after the cluster's removal too, if it failed to start
	c, err := cluster.Start(ctx, "", cluster.Options{Batch: 16, InFlight: 3, Journal: true,
		MatchTimeout: time.Second, PeerTimeout: 2 * time.Second, PeerVia: fp.start})
	if err != nil {
		return nil, err
	}
	defer c.Remove()
	defer fp.close()
	l := &load{c: c, rng: mrand.New(mrand.NewPCG(seed, 2)), id: 1}
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

// Soak streams for d and reports keys/s and each process's RSS.
func Soak(ctx context.Context, d time.Duration, seed uint64, progress io.Writer) (*Report, error) {
	start := time.Now()
	c, err := cluster.Start(ctx, "", cluster.Options{})
	if err != nil {
		return nil, err
	}
	defer c.Remove()
	l := &load{c: c, rng: mrand.New(mrand.NewPCG(seed, 2)), id: 1}
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
