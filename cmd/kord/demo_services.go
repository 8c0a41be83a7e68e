package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/host"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/service"
)

// svcClass is one kind of key in the services demo.
type svcClass struct {
	mode string // bound, derived, consume
	tier string // otp, mac, batchmac ("" for derived)
	typ  fss.Type
	l, n int
}

func (k svcClass) params() fss.Params { return fss.Params{Type: k.typ, InBits: k.l, OutBits: k.n} }

// tierID is the class's tier as reports name it: otp, mac, batchmac, or
// derived for derived mode.
func (k svcClass) tierID() string {
	if k.mode == "derived" {
		return "derived"
	}
	return k.tier
}

// name is the report key <type>-<ℓ>-<tier>, tier otp/mac/batchmac/derived;
// consume adds "-consume".
func (k svcClass) name() string {
	s := fmt.Sprintf("%v-%d-%s", k.typ, k.l, k.tierID())
	if k.mode == "consume" {
		s += "-consume"
	}
	return s
}

// svcTruth is what the demo application knows of one request: α and β
// (bound, consume) or the public β (derived) and the points.
type svcTruth struct {
	alpha, beta uint64
	points      []uint64
}

// svcRequests builds both sites' requests for keys of class k, ids from
// base; derived requests carry up to 64 keys each.
func svcRequests(k svcClass, base uint64, keys int, rng *mrand.Rand) (reqs [2][]*pb.KeyRequest, truth []svcTruth) {
	return svcRequestsPer(k, base, keys, 64, rng)
}

// svcRequestsPer is svcRequests with up to perDerived keys per derived
// request (1..service.MaxCount).
func svcRequestsPer(k svcClass, base uint64, keys, perDerived int, rng *mrand.Rand) (reqs [2][]*pb.KeyRequest, truth []svcTruth) {
	p := k.params()
	ma, mb := prg.Mask(p.InBits), prg.Mask(p.OutBits)
	id := base
	for keys > 0 {
		switch k.mode {
		case "derived":
			c := min(keys, perDerived)
			beta := rng.Uint64() & mb
			for b := 0; b < 2; b++ {
				reqs[b] = append(reqs[b], client.Derived(id, p, c, beta, false))
			}
			truth = append(truth, svcTruth{beta: beta})
			keys -= c
		default:
			t := svcTruth{alpha: rng.Uint64() & ma, beta: rng.Uint64() & mb}
			if t.beta == 0 {
				t.beta = 1
			}
			a0, b0 := rng.Uint64()&ma, rng.Uint64()&mb
			if k.mode == "consume" {
				t.points = []uint64{t.alpha, (t.alpha + 1) & ma, (t.alpha - 1) & ma, rng.Uint64() & ma}
				reqs[0] = append(reqs[0], client.Consume(id, k.tier, p, a0, b0, t.points))
				reqs[1] = append(reqs[1], client.Consume(id, k.tier, p, (t.alpha-a0)&ma, (t.beta-b0)&mb, t.points))
			} else {
				reqs[0] = append(reqs[0], client.Bound(id, k.tier, p, a0, b0))
				reqs[1] = append(reqs[1], client.Bound(id, k.tier, p, (t.alpha-a0)&ma, (t.beta-b0)&mb))
			}
			truth = append(truth, t)
			keys--
		}
		id++
	}
	return reqs, truth
}

// svcCheckKeys evaluates a key pair at α, α±1 and a random point.
func svcCheckKeys(p fss.Params, key0, key1 *fss.Key, alpha, beta uint64, rng *mrand.Rand) bool {
	if key0 == nil || key1 == nil || key0.Params() != p || key1.Params() != p {
		return false
	}
	m := prg.Mask(p.InBits)
	for _, x := range []uint64{alpha, (alpha + 1) & m, (alpha - 1) & m, rng.Uint64() & m} {
		y0, _ := key0.Eval(x)
		y1, _ := key1.Eval(x)
		if (y0+y1)&prg.Mask(p.OutBits) != fss.Truth(p, alpha, beta, x) {
			return false
		}
	}
	return true
}

// svcVerify checks both sites' replies to one request; it returns how
// many key pairs verified and failed.
func svcVerify(k svcClass, t svcTruth, r0, r1 *client.Reply, rng *mrand.Rand) (ok, bad int) {
	if r0 == nil || r1 == nil || r0.Err != nil || r1.Err != nil || len(r0.Shares) != len(r1.Shares) || len(r0.Shares) == 0 || r0.ID != r1.ID {
		return 0, 1
	}
	p := k.params()
	ma, mb := prg.Mask(p.InBits), prg.Mask(p.OutBits)
	for i := range r0.Shares {
		s0, s1 := &r0.Shares[i], &r1.Shares[i]
		good := s0.Counter == s1.Counter
		switch k.mode {
		case "bound":
			good = good && svcCheckKeys(p, s0.Key, s1.Key, t.alpha, t.beta, rng)
		case "derived":
			alpha := (s0.AlphaShare + s1.AlphaShare) & ma
			good = good && (s0.BetaShare+s1.BetaShare)&mb == t.beta && svcCheckKeys(p, s0.Key, s1.Key, alpha, t.beta, rng)
		case "consume":
			good = good && len(s0.Evals) == len(t.points) && len(s1.Evals) == len(t.points)
			for j := 0; good && j < len(t.points); j++ {
				good = (s0.Evals[j]+s1.Evals[j])&mb == fss.Truth(p, t.alpha, t.beta, t.points[j])
			}
		}
		if good {
			ok++
		} else {
			bad++
		}
	}
	return ok, bad
}

// svcStream sends both sites' requests on one stream each and collects the
// replies in order, with their keys parsed (client.Recv): what an
// application gets, and what host.LocalPair hands out in the in-process
// phase, so both timed paths end at parsed key shares. lat[i] is request
// i's latency at site 0.
func svcStream(ctx context.Context, apps [2]*client.Client, reqs [2][]*pb.KeyRequest) (reps [2][]*client.Reply, lat []time.Duration, err error) {
	n := len(reqs[0])
	sent := make([]time.Time, n)
	lat = make([]time.Duration, n)
	var wg sync.WaitGroup
	var errs [4]error
	for b := 0; b < 2; b++ {
		st, e := apps[b].Stream(ctx)
		if e != nil {
			return reps, nil, e
		}
		reps[b] = make([]*client.Reply, 0, n)
		var mu sync.Mutex
		wg.Add(2)
		go func() {
			defer wg.Done()
			const chunk = 64
			for i := 0; i < n; i += chunk {
				rs := reqs[b][i:min(i+chunk, n)]
				if b == 0 {
					mu.Lock()
					now := time.Now()
					for k := range rs {
						sent[i+k] = now
					}
					mu.Unlock()
				}
				if e := st.SendBatch(rs); e != nil {
					errs[2*b] = e
					return
				}
			}
			st.CloseSend()
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				r, e := st.Recv()
				if e != nil {
					errs[2*b+1] = e
					return
				}
				if b == 0 {
					mu.Lock()
					lat[i] = time.Since(sent[i])
					mu.Unlock()
				}
				reps[b] = append(reps[b], r)
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return reps, lat, e
		}
	}
	return reps, lat, nil
}

// svcDemoReport is `kord demo --json` for the multi-process demo.
type svcDemoReport struct {
	Mode                    string             `json:"mode"`
	Processes               int                `json:"processes"`
	ChildProcesses          int                `json:"child_processes"`
	Keys                    int                `json:"keys"`
	PairsVerified           int                `json:"pairs_verified"`
	PairsFailed             int                `json:"pairs_failed"`
	KeysPerSec              float64            `json:"keys_per_sec"`
	InProcessKeysPerSec     float64            `json:"in_process_keys_per_sec"`
	DealerKeysPerSec        float64            `json:"dealer_keys_per_sec"`
	RateRatio               float64            `json:"rate_ratio_vs_in_process"`
	LatencyP50              float64            `json:"latency_ms_p50"`
	LatencyP99              float64            `json:"latency_ms_p99"`
	InProcessLatencyP50     float64            `json:"in_process_latency_ms_p50"`
	InProcessLatencyP99     float64            `json:"in_process_latency_ms_p99"`
	DealerLatencyP50        float64            `json:"dealer_latency_ms_p50"`
	DealerLatencyP99        float64            `json:"dealer_latency_ms_p99"`
	WireBytesPerPartyPerKey map[string]float64 `json:"wire_bytes_per_party_per_key"`
	InProcessBytesPerKey    map[string]float64 `json:"in_process_wire_bytes_per_party_per_key"`
	DealerBytesPerPartyKey  map[string]float64 `json:"dealer_bytes_per_party_per_key"`
	RoundsPerKey            map[string]float64 `json:"rounds_per_key"`
	// KeysPerSecByClass is each class's rate between the processes (the
	// cost of a tier in time; wire_bytes_per_party_per_key its cost in
	// bytes). DefaultTier names the tier of a request that names none.
	KeysPerSecByClass map[string]float64 `json:"keys_per_sec_by_class"`
	DefaultTier       string             `json:"default_tier"`
	Batch             int                `json:"batch"`
	InFlight          int                `json:"in_flight"`
	Resyncs           uint64             `json:"resyncs"`
	// DaemonCPUPerKey is the CPU time (user + system) of the four daemons
	// while they streamed keys (start-up, prefault and pairing excluded:
	// read from /proc before and after each stream), per key they served;
	// 0 where /proc is not available.
	DaemonCPUPerKey float64 `json:"daemon_cpu_us_per_key"`
	// ClientCPUPerKey is this process's CPU time during the timed
	// process-path phases (the application's side: two streams, replies
	// parsed into keys), per key pair.
	ClientCPUPerKey float64 `json:"client_cpu_us_per_key"`
	// InProcessCPUPerKey is this process's CPU time during the in-process
	// phases (both modules, both hosts, keys parsed), per key pair: set
	// against daemon_cpu_us_per_key + client_cpu_us_per_key, it says how
	// much of the rate gap is work the process path adds.
	InProcessCPUPerKey float64 `json:"in_process_cpu_us_per_key"`
	// CPUs is how many CPUs the demo's processes could use. Both sites and
	// the application share them here, so the rate ratio depends on it
	// (BENCHMARKS.md, "Cores").
	CPUs int `json:"cpus"`
	// KEM is the modules' pairing KEM.
	KEM string `json:"kem"`
	// PeerLink is how the parties' peer link ran: "mutual TLS 1.3" (the
	// default) or "plaintext" (--peer-plaintext).
	PeerLink string `json:"peer_link"`
}

func svcDemoClasses() []svcClass {
	var out []svcClass
	for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
		for _, l := range []int{16, 32} {
			for _, t := range []string{"otp", "mac", "batchmac"} {
				out = append(out, svcClass{mode: "bound", tier: t, typ: typ, l: l, n: l})
			}
			out = append(out, svcClass{mode: "derived", typ: typ, l: l, n: l})
		}
	}
	return out
}

func pct(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[min(len(s)-1, int(q*float64(len(s))))]) / 1e6
}

// runServicesDemo is `kord demo` without --in-process: two modules and two
// parties as child processes of this binary on loopback, paired, streaming
// keys of every mode and tier, every pair verified; the same workload runs
// through the in-process path and the dealer for comparison.
func runServicesDemo(ctx context.Context, keys, batch, inFlight int, kem string, seed uint64, plaintext bool, progress io.Writer) (*svcDemoReport, error) {
	rng := mrand.New(mrand.NewPCG(seed, seed^0x6b6f7264))
	say := func(format string, a ...any) {
		if progress != nil {
			fmt.Fprintf(progress, format, a...)
		}
	}
	classes := svcDemoClasses()
	per := max(1, keys/len(classes))
	rep := &svcDemoReport{Mode: "processes", Batch: batch, InFlight: inFlight,
		WireBytesPerPartyPerKey: map[string]float64{}, InProcessBytesPerKey: map[string]float64{},
		DealerBytesPerPartyKey: map[string]float64{}, RoundsPerKey: map[string]float64{},
		KeysPerSecByClass: map[string]float64{}, DefaultTier: service.DefaultTier.String()}

	say("starting 2 modules and 2 parties as child processes on loopback… ")
	c, err := startCluster(ctx, "", clusterOpts{Batch: batch, InFlight: inFlight, KEM: kem, PeerPlaintext: plaintext})
	if err != nil {
		return nil, err
	}
	defer c.Remove()
	rep.PeerLink = "mutual TLS 1.3"
	if plaintext {
		rep.PeerLink = "plaintext"
	}
	rep.KEM = kem
	if kem == "" {
		rep.KEM = "mlkem768" // the modules' default, as demo.go reports it
	}
	rep.ChildProcesses = c.started
	rep.Processes = c.started + 1
	rep.CPUs = runtime.NumCPU()
	say("paired.\n")

	type job struct {
		k     svcClass
		reqs  [2][]*pb.KeyRequest
		truth []svcTruth
	}
	var jobs []job
	id := uint64(1)
	for _, k := range classes {
		r, t := svcRequests(k, id, per, rng)
		id += uint64(len(r[0]))
		jobs = append(jobs, job{k, r, t})
	}
	// A few consume-mode keys, verified by their evaluation shares.
	for _, k := range []svcClass{{mode: "consume", tier: "mac", typ: fss.DPF, l: 16, n: 16}, {mode: "consume", tier: "otp", typ: fss.DCF, l: 32, n: 32}} {
		r, t := svcRequests(k, id, max(1, per/8), rng)
		id += uint64(len(r[0]))
		jobs = append(jobs, job{k, r, t})
	}
	lp, err := host.NewLocalPair(ctx, host.LocalOptions{KEM: kem, InFlight: batch})
	if err != nil {
		return nil, err
	}
	defer lp.Close()
	var total, ipTotal, clientCPU, ipCPU, daemonCPU time.Duration
	daemonOK := true
	var lats, ipLats []time.Duration
	ipKeys := 0
	for i, j := range jobs {
		st0, err0 := c.apps[0].Status(ctx)
		st1, err1 := c.apps[1].Status(ctx)
		if err0 != nil || err1 != nil {
			return nil, fmt.Errorf("status: %v %v", err0, err1)
		}
		d0, ok0 := c.liveCPU()
		cpu0 := selfCPU()
		t0 := time.Now()
		reps, lat, err := svcStream(ctx, c.apps, j.reqs)
		el := time.Since(t0)
		if j.k.mode != "consume" {
			clientCPU += selfCPU() - cpu0
		}
		d1, ok1 := c.liveCPU()
		daemonCPU += d1 - d0
		daemonOK = daemonOK && ok0 && ok1
		if err != nil {
			return nil, fmt.Errorf("%s: %w", j.k.name(), err)
		}
		n := 0
		for ri, t := range j.truth {
			ok, bad := svcVerify(j.k, t, reps[0][ri], reps[1][ri], rng)
			rep.PairsVerified += ok
			rep.PairsFailed += bad
			n += ok + bad
		}
		if j.k.mode != "consume" {
			total += el
			rep.Keys += n
			lats = append(lats, lat...)
		}
		e0, _ := c.apps[0].Status(ctx)
		e1, _ := c.apps[1].Status(ctx)
		bytes := float64(e0.FrameBytesSent-st0.FrameBytesSent+e1.FrameBytesSent-st1.FrameBytesSent) / 2 / float64(n)
		rep.WireBytesPerPartyPerKey[j.k.name()] = bytes
		rep.KeysPerSecByClass[j.k.name()] = math.Round(float64(n) / el.Seconds())
		if j.k.mode != "derived" {
			rep.RoundsPerKey[j.k.name()] = 1 // every key's frames cross in the one exchange of its batch
		} else {
			rep.RoundsPerKey[j.k.name()] = 0
		}
		rep.Resyncs = e0.Resyncs
		if j.k.mode != "consume" {
			// The same class in one process, right after, so that load on
			// the machine affects both paths alike.
			cpu0 := selfCPU()
			el, err := svcInProcessPhase(ctx, lp, j.k, n, batch, rng, rep, &ipLats)
			if err != nil {
				return nil, err
			}
			ipCPU += selfCPU() - cpu0
			ipTotal += el
			ipKeys += n
		}
		say("  [%2d/%d] %-22s %6d keys  %8.0f keys/s  %6.2f B/party/key\n", i+1, len(jobs), j.k.name(), n, float64(n)/el.Seconds(), bytes)
	}
	rep.KeysPerSec = float64(rep.Keys) / total.Seconds()
	c.Close()
	if served := rep.PairsVerified + rep.PairsFailed; served > 0 && daemonOK {
		rep.DaemonCPUPerKey = float64(daemonCPU.Nanoseconds()) / 1e3 / float64(served)
	}
	rep.LatencyP50, rep.LatencyP99 = pct(lats, 0.5), pct(lats, 0.99)

	rep.InProcessKeysPerSec = float64(ipKeys) / ipTotal.Seconds()
	if rep.Keys > 0 && ipKeys > 0 {
		rep.ClientCPUPerKey = float64(clientCPU.Nanoseconds()) / 1e3 / float64(rep.Keys)
		rep.InProcessCPUPerKey = float64(ipCPU.Nanoseconds()) / 1e3 / float64(ipKeys)
	}
	rep.InProcessLatencyP50, rep.InProcessLatencyP99 = pct(ipLats, 0.5), pct(ipLats, 0.99)
	say("same workload through a dealer…\n")
	rep.DealerKeysPerSec = svcDealer(classes, per, rng, rep)
	if rep.InProcessKeysPerSec > 0 {
		rep.RateRatio = rep.KeysPerSec / rep.InProcessKeysPerSec
	}
	return rep, nil
}

// svcInProcessPhase runs keys of class k through an in-process LocalPair.
func svcInProcessPhase(ctx context.Context, lp *host.LocalPair, k svcClass, per, batch int, rng *mrand.Rand, rep *svcDemoReport, lats *[]time.Duration) (time.Duration, error) {
	p := k.params()
	var reqs [2][]host.Request
	tier := msg.MAC
	// Derived: a public β per 64 keys, as svcRequests gives the parties.
	var beta uint64
	for i := 0; i < per; i++ {
		if i%64 == 0 {
			beta = rng.Uint64() & prg.Mask(p.OutBits)
		}
		for b := 0; b < 2; b++ {
			s := msg.Share{Type: p.Type, InBits: p.InBits, OutBits: p.OutBits, Mode: msg.Bound}
			if k.mode == "derived" {
				s.Mode, s.Beta = msg.Derived, beta
			} else {
				s.AlphaShare, s.BetaShare = rng.Uint64()&prg.Mask(p.InBits), rng.Uint64()&prg.Mask(p.OutBits)
				tier, _ = msg.ParseTier(k.tier)
			}
			reqs[b] = append(reqs[b], host.Request{Share: s})
		}
	}
	b0 := lp.Links[0].SentBytes() + lp.Links[1].SentBytes()
	t0 := time.Now()
	if _, err := lp.Generate(ctx, tier, reqs); err != nil {
		return 0, err
	}
	el := time.Since(t0)
	batches := (per + batch - 1) / batch
	for i := 0; i < per; i++ { // a key waits for its batch
		*lats = append(*lats, el/time.Duration(batches))
	}
	rep.InProcessBytesPerKey[k.name()] = float64(lp.Links[0].SentBytes()+lp.Links[1].SentBytes()-b0) / 2 / float64(per)
	return el, nil
}

// svcDealer times a trusted dealer's Gen on the same classes; it sends each
// party its whole key share.
func svcDealer(classes []svcClass, per int, rng *mrand.Rand, rep *svcDemoReport) float64 {
	var total time.Duration
	var lats []time.Duration
	keys := 0
	for _, k := range classes {
		p := k.params()
		t0 := time.Now()
		for i := 0; i < per; i++ {
			s := time.Now()
			fss.Gen(rand.Reader, p, rng.Uint64()&prg.Mask(p.InBits), rng.Uint64()&prg.Mask(p.OutBits))
			lats = append(lats, time.Since(s))
		}
		total += time.Since(t0)
		keys += per
		rep.DealerBytesPerPartyKey[k.name()] = float64(p.KeySize())
	}
	rep.DealerLatencyP50, rep.DealerLatencyP99 = pct(lats, 0.5), pct(lats, 0.99)
	return float64(keys) / total.Seconds()
}

// printServicesDemo prints the report as a table or JSON.
func printServicesDemo(w io.Writer, rep *svcDemoReport, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(w, "\nkord demo: %d OS processes (2 modules, 2 parties, this client) on %d CPUs; peer link %s; %d pairs verified, %d failed\n\n",
		rep.Processes, rep.CPUs, rep.PeerLink, rep.PairsVerified, rep.PairsFailed)
	fmt.Fprintf(w, "%-26s %12s %10s %10s\n", "path", "keys/s", "p50 ms", "p99 ms")
	fmt.Fprintf(w, "%-26s %12.0f %10.3f %10.3f\n", "processes over loopback", rep.KeysPerSec, rep.LatencyP50, rep.LatencyP99)
	fmt.Fprintf(w, "%-26s %12.0f %10.3f %10.3f\n", "in-process (same run)", rep.InProcessKeysPerSec, rep.InProcessLatencyP50, rep.InProcessLatencyP99)
	fmt.Fprintf(w, "%-26s %12.0f %10.3f %10.3f\n", "dealer Gen", rep.DealerKeysPerSec, rep.DealerLatencyP50, rep.DealerLatencyP99)
	fmt.Fprintf(w, "rate ratio processes / in-process: %.2f\n", rep.RateRatio)
	if rep.CPUs < 4 {
		fmt.Fprintf(w, "(the two sites and this client share these %d CPUs; how the ratio depends on them: BENCHMARKS.md, \"Cores\")\n", rep.CPUs)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-24s %14s %14s %14s %8s %10s\n", "keys", "wire B/party", "in-process B", "dealer B", "rounds", "keys/s")
	names := make([]string, 0, len(rep.WireBytesPerPartyPerKey))
	for k := range rep.WireBytesPerPartyPerKey {
		names = append(names, k)
	}
	slices.Sort(names)
	// Consume-mode classes run only between the processes (their keys
	// never leave the modules, so there is nothing to time in process or
	// to hand out as a dealer): print "-" rather than a measured 0.
	cell := func(m map[string]float64, k, format string) string {
		if v, ok := m[k]; ok {
			return fmt.Sprintf(format, v)
		}
		return "-"
	}
	for _, k := range names {
		name := k
		if strings.HasSuffix(k, "-"+rep.DefaultTier) {
			name += " *"
		}
		fmt.Fprintf(w, "%-24s %14.3f %14s %14s %8.0f %10s\n", name, rep.WireBytesPerPartyPerKey[k],
			cell(rep.InProcessBytesPerKey, k, "%.3f"), cell(rep.DealerBytesPerPartyKey, k, "%.0f"), rep.RoundsPerKey[k],
			cell(rep.KeysPerSecByClass, k, "%.0f"))
	}
	fmt.Fprintf(w, "* %s: the default tier of bound and consume requests (authenticated). otp sends the fewest bytes but is an\n"+
		"  explicit opt-in for semi-honest hosts and network only (docs/api.md, \"Tiers\").\n", rep.DefaultTier)
	return nil
}

func init() {
	var (
		keys, batch, inFlight int
		asJSON                bool
		seed                  uint64
		kem                   string
	)
	cmd := &cobra.Command{
		Use:    "demo-processes",
		Short:  "The multi-process demo (what `kord demo` runs without --in-process)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkKEM(kem); err != nil {
				return err
			}
			return svcDemoMain(cmd, keys, batch, inFlight, kem, seed, asJSON)
		},
	}
	f := cmd.Flags()
	f.IntVar(&keys, "keys", 1000, "number of keys")
	f.IntVar(&batch, "batch", service.DefaultBatch, "keys per batch")
	f.IntVar(&inFlight, "in-flight", service.DefaultInFlight, "batches outstanding between the parties")
	f.StringVar(&kem, "kem", "", "pairing KEM: "+strings.Join(module.KEMs(), ", ")+" (default mlkem768)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.Uint64Var(&seed, "seed", 0, "seed of the demo's random requests (0 = from the clock)")
	f.Bool("peer-plaintext", false, "run the parties' peer link without TLS (default: mutual TLS 1.3 with certificates made for the run)")
	rootCmd.AddCommand(cmd)
}

// svcDemoMain runs and prints the multi-process demo.
func svcDemoMain(cmd *cobra.Command, keys, batch, inFlight int, kem string, seed uint64, asJSON bool) error {
	if keys < 1 {
		return badInput("--keys %d must be at least 1", keys)
	}
	if batch < 1 || batch > service.MaxCount || inFlight < 1 || inFlight > 1024 {
		return badInput("--batch must be 1..%d and --in-flight 1..1024", service.MaxCount)
	}
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	defer svcStartProcess("demo", 0)()
	var progress io.Writer
	if !asJSON {
		progress = cmd.ErrOrStderr()
	}
	plaintext, _ := cmd.Flags().GetBool("peer-plaintext")
	rep, err := runServicesDemo(cmd.Context(), keys, batch, inFlight, kem, seed, plaintext, progress)
	if err != nil {
		return err
	}
	if err := printServicesDemo(cmd.OutOrStdout(), rep, asJSON); err != nil {
		return err
	}
	if rep.PairsFailed != 0 {
		return fmt.Errorf("demo: %d key pairs failed verification", rep.PairsFailed)
	}
	return nil
}

// demoServices is `kord demo` without --in-process (called from demo.go,
// which has checked the flags): --batch keys per batch, --in-flight
// batches outstanding, as kord party takes them.
func demoServices(cmd *cobra.Command, o demoOpts) error {
	return svcDemoMain(cmd, o.keys, o.batch, o.inFlight, o.kem, o.seed, o.json)
}
