package demo

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
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/cmd/kord/internal/loadgen"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/host"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/service"
)

// ProcessReport is `kord demo --json` for the multi-process demo.
type ProcessReport struct {
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
	// AppLink is how the application API ran: the parties' Unix sockets
	// (cluster.AppLinkName, --app-link unix, the default), "TLS 1.3,
	// client certificate" (--app-link tcp, with the peer link's TLS) or
	// "plaintext (loopback)".
	AppLink string `json:"app_link"`
	// SlabsHanded counts the messages whose keys came to the application
	// as the memfd its party's module wrote them into.
	SlabsHanded uint64 `json:"slabs_handed"`
}

func processClasses() []loadgen.Class {
	var out []loadgen.Class
	for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
		for _, l := range []int{16, 32} {
			for _, t := range []msg.Tier{msg.Keystream, msg.MAC, msg.BatchMAC} {
				out = append(out, loadgen.Class{Mode: msg.Bound, Tier: t, Type: typ, InBits: l, OutBits: l})
			}
			out = append(out, loadgen.Class{Mode: msg.Derived, Type: typ, InBits: l, OutBits: l})
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

// Processes is `kord demo` without --in-process: two modules and two
// parties as child processes of this binary on loopback, paired, streaming
// keys of every mode and tier, every pair verified; the same workload runs
// through the in-process path and the dealer for comparison.
func Processes(ctx context.Context, keys, batch, inFlight int, kem string, seed uint64, plaintext, appUnix bool, progress io.Writer) (*ProcessReport, error) {
	rng := mrand.New(mrand.NewPCG(seed, seed^0x6b6f7264))
	say := func(format string, a ...any) {
		if progress != nil {
			fmt.Fprintf(progress, format, a...)
		}
	}
	classes := processClasses()
	per := max(1, keys/len(classes))
	rep := &ProcessReport{Mode: "processes", Batch: batch, InFlight: inFlight,
		WireBytesPerPartyPerKey: map[string]float64{}, InProcessBytesPerKey: map[string]float64{},
		DealerBytesPerPartyKey: map[string]float64{}, RoundsPerKey: map[string]float64{},
		KeysPerSecByClass: map[string]float64{}, DefaultTier: service.DefaultTier.String()}

	say("starting 2 modules and 2 parties as child processes on loopback… ")
	c, err := cluster.Start(ctx, "", cluster.Options{Batch: batch, InFlight: inFlight, KEM: kem, PeerPlaintext: plaintext, AppUnix: appUnix})
	if err != nil {
		return nil, err
	}
	defer c.Remove()
	handed := client.HandedMessages()
	defer func() { rep.SlabsHanded = client.HandedMessages() - handed }()
	rep.PeerLink, rep.AppLink = "mutual TLS 1.3", AppLinkTLS
	if plaintext {
		rep.PeerLink, rep.AppLink = "plaintext", AppLinkPlain
	}
	if appUnix {
		rep.AppLink = c.AppLink()
	}
	rep.KEM = kem
	if kem == "" {
		rep.KEM = "mlkem768" // the modules' default, as InProcess reports it
	}
	rep.ChildProcesses = c.Started()
	rep.Processes = c.Started() + 1
	rep.CPUs = runtime.NumCPU()
	say("paired.\n")

	type job struct {
		k     loadgen.Class
		reqs  [2][]*pb.KeyRequest
		truth []loadgen.Truth
	}
	var jobs []job
	id := uint64(1)
	for _, k := range classes {
		r, t := loadgen.Requests(k, id, per, rng)
		id += uint64(len(r[0]))
		jobs = append(jobs, job{k, r, t})
	}
	// A few consume-mode keys, verified by their evaluation shares.
	for _, k := range []loadgen.Class{{Mode: msg.Consume, Tier: msg.MAC, Type: fss.DPF, InBits: 16, OutBits: 16}, {Mode: msg.Consume, Tier: msg.Keystream, Type: fss.DCF, InBits: 32, OutBits: 32}} {
		r, t := loadgen.Requests(k, id, max(1, per/8), rng)
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
		st0, err0 := c.Apps()[0].Status(ctx)
		st1, err1 := c.Apps()[1].Status(ctx)
		if err0 != nil || err1 != nil {
			return nil, fmt.Errorf("status: %v %v", err0, err1)
		}
		d0, ok0 := c.LiveCPU()
		cpu0 := cluster.SelfCPU()
		t0 := time.Now()
		reps, lat, err := loadgen.Stream(ctx, c.Apps(), j.reqs)
		el := time.Since(t0)
		if j.k.Mode != msg.Consume {
			clientCPU += cluster.SelfCPU() - cpu0
		}
		d1, ok1 := c.LiveCPU()
		daemonCPU += d1 - d0
		daemonOK = daemonOK && ok0 && ok1
		if err != nil {
			return nil, fmt.Errorf("%s: %w", j.k.Name(), err)
		}
		n := 0
		for ri, t := range j.truth {
			ok, bad := loadgen.Verify(j.k, t, reps[0][ri], reps[1][ri], rng)
			rep.PairsVerified += ok
			rep.PairsFailed += bad
			n += ok + bad
		}
		if j.k.Mode != msg.Consume {
			total += el
			rep.Keys += n
			lats = append(lats, lat...)
		}
		e0, _ := c.Apps()[0].Status(ctx)
		e1, _ := c.Apps()[1].Status(ctx)
		bytes := float64(e0.FrameBytesSent-st0.FrameBytesSent+e1.FrameBytesSent-st1.FrameBytesSent) / 2 / float64(n)
		rep.WireBytesPerPartyPerKey[j.k.Name()] = bytes
		rep.KeysPerSecByClass[j.k.Name()] = math.Round(float64(n) / el.Seconds())
		if j.k.Mode != msg.Derived {
			rep.RoundsPerKey[j.k.Name()] = 1 // every key's frames cross in the one exchange of its batch
		} else {
			rep.RoundsPerKey[j.k.Name()] = 0
		}
		rep.Resyncs = e0.Resyncs
		if j.k.Mode != msg.Consume {
			// The same class in one process, right after, so that load on
			// the machine affects both paths alike.
			cpu0 := cluster.SelfCPU()
			el, err := inProcessPhase(ctx, lp, j.k, n, batch, rng, rep, &ipLats)
			if err != nil {
				return nil, err
			}
			ipCPU += cluster.SelfCPU() - cpu0
			ipTotal += el
			ipKeys += n
		}
		say("  [%2d/%d] %-22s %6d keys  %8.0f keys/s  %6.2f B/party/key\n", i+1, len(jobs), j.k.Name(), n, float64(n)/el.Seconds(), bytes)
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
	rep.DealerKeysPerSec = dealerPhase(classes, per, rng, rep)
	if rep.InProcessKeysPerSec > 0 {
		rep.RateRatio = rep.KeysPerSec / rep.InProcessKeysPerSec
	}
	return rep, nil
}

// inProcessPhase runs keys of class k through an in-process LocalPair.
func inProcessPhase(ctx context.Context, lp *host.LocalPair, k loadgen.Class, per, batch int, rng *mrand.Rand, rep *ProcessReport, lats *[]time.Duration) (time.Duration, error) {
	p := k.Params()
	var reqs [2][]host.Request
	tier := msg.MAC
	// Derived: a public β per 64 keys, as loadgen.Requests gives the parties.
	var beta uint64
	for i := 0; i < per; i++ {
		if i%64 == 0 {
			beta = rng.Uint64() & prg.Mask(p.OutBits)
		}
		for b := 0; b < 2; b++ {
			s := msg.Share{Type: p.Type, InBits: p.InBits, OutBits: p.OutBits, Mode: msg.Bound}
			if k.Mode == msg.Derived {
				s.Mode, s.Beta = msg.Derived, beta
			} else {
				s.AlphaShare, s.BetaShare = rng.Uint64()&prg.Mask(p.InBits), rng.Uint64()&prg.Mask(p.OutBits)
				tier = k.Tier
			}
			reqs[b] = append(reqs[b], host.Request{Share: s})
		}
	}
	b0 := lp.SentBytes(0) + lp.SentBytes(1)
	t0 := time.Now()
	if _, err := lp.Generate(ctx, tier, reqs); err != nil {
		return 0, err
	}
	el := time.Since(t0)
	batches := (per + batch - 1) / batch
	for i := 0; i < per; i++ { // a key waits for its batch
		*lats = append(*lats, el/time.Duration(batches))
	}
	rep.InProcessBytesPerKey[k.Name()] = float64(lp.SentBytes(0)+lp.SentBytes(1)-b0) / 2 / float64(per)
	return el, nil
}

// dealerPhase times a trusted dealer's Gen on the same classes; it sends each
// party its whole key share.
func dealerPhase(classes []loadgen.Class, per int, rng *mrand.Rand, rep *ProcessReport) float64 {
	var total time.Duration
	var lats []time.Duration
	keys := 0
	for _, k := range classes {
		p := k.Params()
		t0 := time.Now()
		for i := 0; i < per; i++ {
			s := time.Now()
			fss.Gen(rand.Reader, p, rng.Uint64()&prg.Mask(p.InBits), rng.Uint64()&prg.Mask(p.OutBits))
			lats = append(lats, time.Since(s))
		}
		total += time.Since(t0)
		keys += per
		rep.DealerBytesPerPartyKey[k.Name()] = float64(p.KeySize())
	}
	rep.DealerLatencyP50, rep.DealerLatencyP99 = pct(lats, 0.5), pct(lats, 0.99)
	return float64(keys) / total.Seconds()
}

// PrintProcesses prints a multi-process demo report as a table or JSON.
func PrintProcesses(w io.Writer, rep *ProcessReport, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(w, "\nkord demo: %d OS processes (2 modules, 2 parties, this client) on %d CPUs; peer link %s; application API %s; %d pairs verified, %d failed\n\n",
		rep.Processes, rep.CPUs, rep.PeerLink, rep.AppLink, rep.PairsVerified, rep.PairsFailed)
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

// The application API's transport in the demo's reports: TLS with the
// demo application's client certificate whenever the peer link runs TLS
// (cluster.Start), plaintext on loopback with --peer-plaintext.
const (
	AppLinkTLS   = "TLS 1.3, client certificate"
	AppLinkPlain = "plaintext (loopback)"
)
