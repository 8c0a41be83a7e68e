package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	mrand "math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/cmd/kord/internal/loadgen"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// PairsOptions set up `kord demo --pairs K`.
type PairsOptions struct {
	Pairs           int    // module pairs (each two modules and two parties)
	Keys            int    // verified key pairs to deliver
	Batch, InFlight int    // as kord party --batch, --in-flight
	KEM             string // modules' pairing KEM ("" = default)
	Seed            uint64
	Plaintext       bool // peer links without TLS
	// Fault: "" none, "module0" or "module1": kill -9 that module of pair
	// 0 once a third of the keys are delivered (needs Pairs ≥ 2).
	Fault string
	// Stall is the pools' PoolOptions.Stall (default 3 s).
	Stall time.Duration
	// LinkBytes: relay each pair's peer link through a counter in this
	// process and report its bytes per key (the relay costs CPU: leave it
	// out of rate comparisons).
	LinkBytes bool
	// AppUnix: each pair's parties serve the application on Unix sockets
	// (a same-host application; whole slabs come as memfds), not TLS.
	AppUnix bool
}

// Faults are the values of PairsOptions.Fault.
var Faults = []string{"module0", "module1"}

// PairRate is one pair's share of a pairs run.
type PairRate struct {
	Pair       int     `json:"pair"`
	Keys       int     `json:"keys"`
	KeysPerSec float64 `json:"keys_per_sec"`
	// KeysPerBatch is party 0's keys delivered per batch it ran (from its
	// Status, whole run): how full the pair's batches were.
	KeysPerBatch float64 `json:"keys_per_batch,omitempty"`
	// Down is why the leader last took the pair down ("" if never).
	Down string `json:"down,omitempty"`
}

// PairsReport is one run of `kord demo --pairs K --json`.
type PairsReport struct {
	Mode      string `json:"mode"` // "pairs"
	Pairs     int    `json:"pairs"`
	Processes int    `json:"child_processes"`
	CPUs      int    `json:"cpus"`
	Class     string `json:"class"`
	Batch     int    `json:"batch"`
	InFlight  int    `json:"in_flight"`
	PeerLink  string `json:"peer_link"`
	AppLink   string `json:"app_link"` // as ProcessReport.AppLink
	// SlabsHanded counts the messages whose keys came to the application
	// as a module's memfd (AppUnix).
	SlabsHanded uint64 `json:"slabs_handed"`
	// Keys is the key pairs asked for; PairsVerified those delivered at
	// both sites and checked (Eval(0,k0,x)+Eval(1,k1,x) = f(x) at α, α±1
	// and a random x); PairsFailed delivered pairs that did not check.
	Keys          int `json:"keys"`
	PairsVerified int `json:"pairs_verified"`
	PairsFailed   int `json:"pairs_failed"`
	// Lost is asks that ended neither verified nor re-asked (0 when the
	// run completes).
	Lost int `json:"lost"`
	// Refused is asks answered with a refusal at either site, by class
	// (site 0's class, else site 1's); each was asked again under a new id
	// with a fresh α. OneSided counts those among them with keys at one
	// site: the application discarded that share (the refusal at the other
	// site decides).
	Refused map[string]int `json:"refused"`
	Reasked int            `json:"reasked"`
	// Abandoned is the refusals a pool made itself (a pair's stream broke
	// or stalled with the request unanswered: spent), at either site.
	Abandoned int `json:"abandoned"`
	OneSided  int `json:"one_sided_discarded"`
	// KeysPerSec is the aggregate: verified pairs over the run's seconds
	// (first request to last verified pair); PerPair splits it.
	KeysPerSec float64    `json:"keys_per_sec"`
	Seconds    float64    `json:"seconds"`
	PerPair    []PairRate `json:"per_pair"`
	// DaemonCPUPerKey: the daemons' CPU time (user + system) during the
	// run per verified pair, in µs; ClientCPUPerKey this process's.
	DaemonCPUPerKey float64 `json:"daemon_cpu_us_per_key"`
	// ModuleCPUPerKey and PartyCPUPerKey split it by role, per site: one
	// module's (one party's) CPU per key it served, averaged over both
	// sites and all pairs (what a pod's resource requests follow).
	ModuleCPUPerKey float64 `json:"module_cpu_us_per_key"`
	PartyCPUPerKey  float64 `json:"party_cpu_us_per_key"`
	ClientCPUPerKey float64 `json:"client_cpu_us_per_key"`
	// PeerLinkBytesPerKey is what the peer links carried, both directions,
	// per verified pair (LinkBytes; 0 otherwise): frames, batch headers
	// and confirmations, gRPC and TLS framing.
	PeerLinkBytesPerKey float64 `json:"peer_link_bytes_per_key,omitempty"`
	// The fault run: what was killed, when (verified pairs by then), and
	// what the pool delivered after it.
	Fault          string `json:"fault,omitempty"`
	FaultAtKeys    int    `json:"fault_at_keys,omitempty"`
	KeysAfterFault int    `json:"keys_after_fault,omitempty"`
	FaultPairAfter int    `json:"fault_pair_keys_after_fault,omitempty"`
	// FaultDetectMs is how long after the kill the leader first skipped
	// the pair (its health check or the stall watchdog).
	FaultDetectMs float64 `json:"fault_detect_ms,omitempty"`
}

// PairsSweep is `kord demo --pairs K1,K2,... --json`: one run per K, in
// the same process one after another.
type PairsSweep struct {
	CPUs int            `json:"cpus"`
	Runs []*PairsReport `json:"runs"`
}

// pairsClass is the demo's key class: bound DPF, ℓ = n = 32, the default
// tier.
var pairsClass = loadgen.Class{Mode: msg.Bound, Tier: msg.BatchMAC, Type: fss.DPF, InBits: 32, OutBits: 32}

// ask is one key pair the application wants.
type ask struct {
	req   [2]*pb.KeyRequest
	truth loadgen.Truth
}

// Pairs is `kord demo --pairs K`: K module pairs (each two modules and
// two parties as child processes on loopback, its own pairing, secret and
// state files), one client.Pool per site over them. This process plays
// both sites' applications: site 0's pool chooses each chunk's pair, site
// 1's follows the ids; every delivered pair is verified, every refusal is
// asked again with a fresh α until Keys pairs are verified.
func Pairs(ctx context.Context, o PairsOptions, progress io.Writer) (*PairsReport, error) {
	say := func(format string, a ...any) {
		if progress != nil {
			fmt.Fprintf(progress, format, a...)
		}
	}
	if o.Pairs < 1 || o.Pairs > client.MaxPoolPairs {
		return nil, fmt.Errorf("demo: %d pairs: want 1..%d", o.Pairs, client.MaxPoolPairs)
	}
	if o.Fault != "" && !slices.Contains(Faults, o.Fault) {
		return nil, fmt.Errorf("demo: fault %q: want one of %v", o.Fault, Faults)
	}
	if o.Fault != "" && o.Pairs < 2 {
		return nil, errors.New("demo: a fault run needs at least 2 pairs (one to kill, one to carry on)")
	}
	if o.Stall <= 0 {
		o.Stall = 3 * time.Second
	}
	rep := &PairsReport{Mode: "pairs", Pairs: o.Pairs, CPUs: runtime.NumCPU(), Class: pairsClass.Name(), Batch: o.Batch, InFlight: o.InFlight,
		Keys: o.Keys, Refused: map[string]int{}, Fault: o.Fault, PeerLink: "mutual TLS 1.3", AppLink: AppLinkTLS}
	if o.Plaintext {
		rep.PeerLink, rep.AppLink = "plaintext", AppLinkPlain
	}
	if o.AppUnix {
		rep.AppLink = cluster.AppLinkName("unix")
	}
	handed := client.HandedMessages()
	defer func() { rep.SlabsHanded = client.HandedMessages() - handed }()
	say("starting %d pairs (%d modules, %d parties) as child processes on loopback… ", o.Pairs, 2*o.Pairs, 2*o.Pairs)
	cs := make([]*cluster.Cluster, o.Pairs)
	errs := make([]error, o.Pairs)
	counters := make([]*linkCounter, o.Pairs)
	defer func() {
		for _, lc := range counters {
			if lc != nil {
				lc.close()
			}
		}
	}()
	var wg sync.WaitGroup
	for i := range cs {
		wg.Go(func() {
			co := cluster.Options{Batch: o.Batch, InFlight: o.InFlight, KEM: o.KEM, PeerPlaintext: o.Plaintext, AppUnix: o.AppUnix}
			if o.LinkBytes {
				co.PeerVia = func(peer string) (string, error) {
					lc, err := newLinkCounter(peer)
					counters[i] = lc
					if err != nil {
						return "", err
					}
					return lc.addr(), nil
				}
			}
			cs[i], errs[i] = cluster.Start(ctx, "", co)
		})
	}
	wg.Wait()
	defer func() {
		for _, c := range cs {
			if c != nil {
				c.Remove()
			}
		}
	}()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var sites [2][]*client.Client
	for _, c := range cs {
		apps := c.Apps()
		sites[0], sites[1] = append(sites[0], apps[0]), append(sites[1], apps[1])
		rep.Processes += c.Started()
	}
	say("paired.\n")
	var pools [2]*client.Pool
	for b := range pools {
		var err error
		if pools[b], err = client.NewPool(b, sites[b], client.PoolOptions{Stall: o.Stall}); err != nil {
			return nil, err
		}
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go pools[0].Watch(rctx, 100*time.Millisecond) // the leader's health checks
	var streams [2]*client.PoolStream
	for b := range streams {
		var err error
		if streams[b], err = pools[b].Stream(rctx); err != nil {
			return nil, err
		}
		defer streams[b].Close()
	}

	rng := mrand.New(mrand.NewPCG(o.Seed, o.Seed^0x706f6f6c))
	var (
		mu      sync.Mutex
		queue   []ask // asks not yet sent
		seq     uint64
		more    = make(chan struct{}, 1)
		window  = make(chan struct{}, max(1, o.Pairs*o.Batch*o.InFlight)) // asks outstanding
		pending = map[uint64]ask{}
	)
	// newAsks queues n asks with fresh α, β.
	newAsks := func(n int) {
		reqs, truth := loadgen.Requests(pairsClass, 0, n, rng)
		mu.Lock()
		for i := range truth {
			queue = append(queue, ask{req: [2]*pb.KeyRequest{reqs[0][i], reqs[1][i]}, truth: truth[i]})
		}
		mu.Unlock()
		select {
		case more <- struct{}{}:
		default:
		}
	}
	newAsks(o.Keys)

	// The sender: chunks of up to half a batch of asks, each chunk on the
	// pair the leader chooses. Runs that short of a batch leave each
	// party's batches part-empty, which costs the daemons CPU per key
	// (BENCHMARKS.md, "Pair groups").
	sendErr := make(chan error, 1)
	go func() {
		chunk := max(64, o.Batch/2)
		for {
			mu.Lock()
			n := min(chunk, len(queue))
			batch := slices.Clone(queue[:n])
			queue = queue[n:]
			mu.Unlock()
			if n == 0 {
				select {
				case <-more:
					continue
				case <-rctx.Done():
					return
				}
			}
			for range batch {
				select {
				case window <- struct{}{}:
				case <-rctx.Done():
					return
				}
			}
			var site [2][]*pb.KeyRequest
			for {
				mu.Lock()
				for _, a := range batch {
					a.req[0].Id, a.req[1].Id = seq, seq
					seq++
				}
				mu.Unlock()
				site[0], site[1] = site[0][:0], site[1][:0]
				for _, a := range batch {
					site[0], site[1] = append(site[0], a.req[0]), append(site[1], a.req[1])
				}
				if _, err := pools[0].Assign(site[0]...); err != nil {
					if !errors.Is(err, client.ErrNoPair) {
						sendErr <- err
						return
					}
					select { // every pair down: wait for one to come back
					case <-time.After(50 * time.Millisecond):
						continue
					case <-rctx.Done():
						return
					}
				}
				break
			}
			mu.Lock()
			for _, a := range batch {
				a.req[1].Id = a.req[0].Id // the id, pair included, as site 0's application hands it over
				pending[a.req[0].Id] = a
			}
			mu.Unlock()
			for b := range streams {
				if err := streams[b].SendBatch(site[b]); err != nil {
					sendErr <- fmt.Errorf("site %d: %w", b, err)
					return
				}
			}
		}
	}()

	type siteReply struct {
		site int
		r    client.PoolReply
		err  error
	}
	replies := make(chan siteReply, 4096)
	for b := range streams {
		go func() {
			for {
				r, err := streams[b].Recv()
				select {
				case replies <- siteReply{b, r, err}:
				case <-rctx.Done():
					return
				}
				if err != nil {
					return
				}
			}
		}()
	}

	verify := mrand.New(mrand.NewPCG(o.Seed^1, o.Seed^2))
	perPair := make([]int, o.Pairs)
	got := map[uint64][2]*client.PoolReply{}
	faultDone := false
	detected := make(chan time.Duration, 1)
	faultPairAt := 0
	var faultAt time.Time
	d0, ok0 := liveCPU(cs)
	roles0, rok0 := roleCPU(cs)
	link0 := linkBytes(counters)
	cpu0 := cluster.SelfCPU()
	t0 := time.Now()
	lastSay := t0
	for rep.PairsVerified < o.Keys {
		var sr siteReply
		select {
		case sr = <-replies:
		case err := <-sendErr:
			return nil, err
		case <-ctx.Done():
			rep.Lost = o.Keys - rep.PairsVerified
			return rep, fmt.Errorf("demo: %d of %d pairs verified when the run ended: %w", rep.PairsVerified, o.Keys, ctx.Err())
		}
		if sr.err != nil {
			return nil, fmt.Errorf("demo: site %d pool stream: %w", sr.site, sr.err)
		}
		id := sr.r.ID
		mu.Lock()
		a, ok := pending[id]
		mu.Unlock()
		if !ok { // a second reply for an id already settled (void): its share was never used
			continue
		}
		g := got[id]
		r := sr.r
		g[sr.site] = &r
		if g[0] == nil || g[1] == nil {
			got[id] = g
			continue
		}
		delete(got, id)
		mu.Lock()
		delete(pending, id)
		mu.Unlock()
		<-window
		if g[0].Err != nil || g[1].Err != nil {
			class := "error"
			for _, x := range g {
				var re *client.ReplyError
				if errors.As(x.Err, &re) {
					class = re.Class
					break
				}
			}
			rep.Refused[class]++
			if g[0].Abandoned || g[1].Abandoned {
				rep.Abandoned++
			}
			if g[0].Err == nil || g[1].Err == nil {
				rep.OneSided++
			}
			rep.Reasked++
			newAsks(1) // a fresh α, under a new id the leader assigns
			continue
		}
		if g[0].Pair != g[1].Pair || g[0].Pair != client.PoolPair(id) {
			return nil, fmt.Errorf("demo: id %#x answered by pairs %d and %d", id, g[0].Pair, g[1].Pair)
		}
		okN, bad := loadgen.Verify(pairsClass, a.truth, g[0].Reply, g[1].Reply, verify)
		rep.PairsVerified += okN
		rep.PairsFailed += bad
		perPair[g[0].Pair] += okN
		if bad > 0 {
			return rep, fmt.Errorf("demo: id %#x: key pair from pair %d did not verify", id, g[0].Pair)
		}
		if o.Fault != "" && !faultDone && rep.PairsVerified >= o.Keys/3 {
			faultDone, faultAt, rep.FaultAtKeys, faultPairAt = true, time.Now(), rep.PairsVerified, perPair[0]
			say("  killing pair 0's %s (kill -9) after %d verified pairs\n", o.Fault, rep.PairsVerified)
			go func() {
				cs[0].KillModule(map[string]int{"module0": 0, "module1": 1}[o.Fault])
				for pools[0].Up(0) && rctx.Err() == nil {
					time.Sleep(5 * time.Millisecond)
				}
				detected <- time.Since(faultAt)
			}()
		}
		if progress != nil && time.Since(lastSay) > time.Second {
			lastSay = time.Now()
			say("  %7d / %d pairs verified\n", rep.PairsVerified, o.Keys)
		}
	}
	el := time.Since(t0)
	clientCPU := cluster.SelfCPU() - cpu0
	d1, ok1 := liveCPU(cs)
	roles1, rok1 := roleCPU(cs)
	if o.LinkBytes {
		rep.PeerLinkBytesPerKey = float64(linkBytes(counters)-link0) / float64(rep.PairsVerified)
	}
	cancel()
	rep.Seconds = el.Seconds()
	rep.KeysPerSec = float64(rep.PairsVerified) / el.Seconds()
	if ok0 && ok1 && o.Fault == "" {
		rep.DaemonCPUPerKey = float64((d1 - d0).Nanoseconds()) / 1e3 / float64(rep.PairsVerified)
	}
	if rok0 && rok1 && o.Fault == "" {
		// each role has 2 daemons per pair; each served the keys of its pair
		rep.ModuleCPUPerKey = float64((roles1[0] - roles0[0]).Nanoseconds()) / 1e3 / float64(2*rep.PairsVerified)
		rep.PartyCPUPerKey = float64((roles1[1] - roles0[1]).Nanoseconds()) / 1e3 / float64(2*rep.PairsVerified)
	}
	rep.ClientCPUPerKey = float64(clientCPU.Nanoseconds()) / 1e3 / float64(rep.PairsVerified)
	for i, n := range perPair {
		pr := PairRate{Pair: i, Keys: n, KeysPerSec: float64(n) / el.Seconds()}
		sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
		if st, err := sites[0][i].Status(sctx); err == nil && st.Batches > 0 {
			pr.KeysPerBatch = float64(st.KeysDelivered) / float64(st.Batches)
		}
		scancel()
		if why, downs := pools[0].Down(i); why != nil {
			pr.Down = why.Error()
		} else if downs > 0 {
			pr.Down = fmt.Sprintf("down %d times, up again", downs)
		}
		rep.PerPair = append(rep.PerPair, pr)
	}
	if faultDone {
		rep.KeysAfterFault = rep.PairsVerified - rep.FaultAtKeys
		rep.FaultPairAfter = perPair[0] - faultPairAt
		select {
		case d := <-detected:
			rep.FaultDetectMs = float64(d.Microseconds()) / 1e3
		default: // not skipped before the run ended
		}
	}
	return rep, nil
}

// liveCPU is the CPU time of every cluster's daemons.
func liveCPU(cs []*cluster.Cluster) (time.Duration, bool) {
	var t time.Duration
	ok := true
	for _, c := range cs {
		d, o := c.LiveCPU()
		t += d
		ok = ok && o
	}
	return t, ok
}

// linkBytes is what the peer-link counters have relayed.
func linkBytes(cs []*linkCounter) int64 {
	var n int64
	for _, c := range cs {
		if c != nil {
			n += c.bytes.Load()
		}
	}
	return n
}

// roleCPU is the CPU time of every cluster's modules ([0]) and parties
// ([1]).
func roleCPU(cs []*cluster.Cluster) (t [2]time.Duration, ok bool) {
	ok = true
	for _, c := range cs {
		for b := range 2 {
			for r, d := range []*cluster.Daemon{c.Module(b), c.Party(b)} {
				if d == nil {
					ok = false
					continue
				}
				x, err := d.CPU()
				ok = ok && err == nil
				t[r] += x
			}
		}
	}
	return t, ok
}

// PairsRuns runs Pairs once per K of ks, one after another.
func PairsRuns(ctx context.Context, ks []int, o PairsOptions, progress io.Writer) (*PairsSweep, error) {
	sw := &PairsSweep{CPUs: runtime.NumCPU()}
	for _, k := range ks {
		o.Pairs = k
		rep, err := Pairs(ctx, o, progress)
		if err != nil {
			return sw, fmt.Errorf("%d pairs: %w", k, err)
		}
		sw.Runs = append(sw.Runs, rep)
	}
	return sw, nil
}

// PrintPairs prints a pairs sweep as a table or JSON.
func PrintPairs(w io.Writer, sw *PairsSweep, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(sw)
	}
	fmt.Fprintf(w, "\nkord demo --pairs: %s keys through K module pairs (4 processes each) on %d CPUs; every delivered pair verified\n\n", pairsClass.Name(), sw.CPUs)
	fmt.Fprintf(w, "%6s %10s %10s %8s %8s %9s %12s  %s\n", "pairs", "verified", "failed", "lost", "reasked", "one-side", "keys/s", "per pair keys/s")
	for _, r := range sw.Runs {
		var per []string
		for _, p := range r.PerPair {
			per = append(per, fmt.Sprintf("%.0f", p.KeysPerSec))
		}
		fmt.Fprintf(w, "%6d %10d %10d %8d %8d %9d %12.0f  %v\n", r.Pairs, r.PairsVerified, r.PairsFailed, r.Lost, r.Reasked, r.OneSided, r.KeysPerSec, per)
	}
	for _, r := range sw.Runs {
		if r.Fault == "" {
			continue
		}
		fmt.Fprintf(w, "\nfault (%d pairs): pair 0's %s killed after %d verified pairs; %d pairs verified after it (%d of them by pair 0);\n",
			r.Pairs, r.Fault, r.FaultAtKeys, r.KeysAfterFault, r.FaultPairAfter)
		fmt.Fprintf(w, "  the leader skipped pair 0 %.0f ms after the kill\n", r.FaultDetectMs)
		fmt.Fprintf(w, "  refused and asked again with a fresh α: %v (%d abandoned by a pool); keys at one site only (discarded): %d; lost: %d\n", r.Refused, r.Abandoned, r.OneSided, r.Lost)
		for _, p := range r.PerPair {
			if p.Down != "" {
				fmt.Fprintf(w, "  pair %d: %s\n", p.Pair, p.Down)
			}
		}
	}
	if len(sw.Runs) > 0 {
		r := sw.Runs[0]
		var handed []string
		for _, r := range sw.Runs {
			handed = append(handed, fmt.Sprint(r.SlabsHanded))
		}
		fmt.Fprintf(w, "\npeer links: %s; application link: %s; messages handed on as memfds per run: %s\n", r.PeerLink, r.AppLink, strings.Join(handed, ", "))
	}
	if sw.CPUs < 4 {
		fmt.Fprintf(w, "(both sites, every pair and this client share these %d CPUs: the aggregate can hold as K grows, not rise)\n", sw.CPUs)
	}
	return nil
}

// PlotPairs draws aggregate and per-pair keys/s against K to file (PNG).
func PlotPairs(file string, sw *PairsSweep) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("kord demo --pairs: verified %s key pairs/s, %d CPUs", pairsClass.Name(), sw.CPUs)
	p.X.Label.Text = "module pairs K"
	p.Y.Label.Text = "keys/s"
	p.Add(plotter.NewGrid())
	var agg, per plotter.XYs
	for _, r := range sw.Runs {
		if r.Fault != "" {
			continue
		}
		agg = append(agg, plotter.XY{X: float64(r.Pairs), Y: r.KeysPerSec})
		for _, pr := range r.PerPair {
			per = append(per, plotter.XY{X: float64(r.Pairs), Y: pr.KeysPerSec})
		}
	}
	if len(agg) == 0 {
		return errors.New("demo: no run without a fault to plot")
	}
	l, pts, err := plotter.NewLinePoints(agg)
	if err != nil {
		return err
	}
	l.Color, pts.Color = color.RGBA{B: 200, A: 255}, color.RGBA{B: 200, A: 255}
	sc, err := plotter.NewScatter(per)
	if err != nil {
		return err
	}
	sc.Color = color.RGBA{R: 200, A: 255}
	p.Add(l, pts, sc)
	p.Legend.Add("aggregate", l, pts)
	p.Legend.Add("each pair", sc)
	p.Legend.Top = false
	p.Y.Min = 0
	p.X.Min, p.X.Max = 0, agg[len(agg)-1].X+1
	var ticks []plot.Tick
	for _, a := range agg {
		ticks = append(ticks, plot.Tick{Value: a.X, Label: fmt.Sprintf("%.0f", a.X)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Tick.Marker = plainTicks{}
	return p.Save(8*vg.Inch, 4.5*vg.Inch, file)
}
