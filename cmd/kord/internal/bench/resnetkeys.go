package bench

// kord bench resnet18-keys: every DCF key of one private ResNet-18
// inference at ImageNet shape (infer.KeyInventory: the ReLU, max-pool and
// truncation keys of kord's layer protocols) through the five processes of
// kord demo (2 modules, 2 party daemons, this client), as derived-mode
// requests; against KORD's published 1.14 s and a trusted dealer's
// generation of the same keys measured in the same run (issue 22).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"runtime"
	"sort"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/infer"
	"github.com/kord-fss/kord/internal/both"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Published figures the run is set against.
const (
	// LLAMAResNet18GenSec is EzPC LLAMA's trusted dealer's key generation
	// for ResNet-18 (the target: kord's five processes must beat it).
	LLAMAResNet18GenSec = 18.54
)

// ResNetKeysConfig are the flags of bench resnet18-keys.
type ResNetKeysConfig struct {
	Model    string  // infer.ParseResNetName name (resnet18: ImageNet shape)
	Fraction float64 // of the inventory's keys to run (0 < f ≤ 1; 1: all)
	Chunk    int     // keys per stream between two verification pauses
	PerReq   int     // keys per derived request
	Batch    int     // the parties' --batch
	InFlight int     // the parties' --in-flight
	Verify   int     // key pairs verified per chunk (outside the clock)
	NoDealer bool    // skip the dealer's generation
	NoCorr   bool    // skip the correlations
	// AppLink is how this client reaches the parties: "unix" (the
	// same-host application on the parties' Unix-socket API, named by its
	// uid) or "tcp" (a remote application: TLS 1.3 over TCP).
	AppLink string
}

// Check validates the flags.
func (o ResNetKeysConfig) Check() error {
	if _, ok := infer.ParseResNetName(o.Model); !ok {
		return fmt.Errorf("--model %q: want resnet18 or resnet18-s<side>-w<width>-c<classes>", o.Model)
	}
	switch {
	case o.Fraction <= 0 || o.Fraction > 1:
		return errors.New("--fraction must be in (0, 1]")
	case o.Chunk < 1 || o.Chunk > 1<<20:
		return errors.New("--chunk must be in 1..1048576")
	case o.PerReq < 1 || o.PerReq > 4096:
		return errors.New("--per-request must be in 1..4096")
	case o.Batch < 1 || o.InFlight < 1:
		return errors.New("--batch and --in-flight must be positive")
	case o.Verify < 0:
		return errors.New("--verify must be ≥ 0")
	}
	return cluster.CheckAppLink(o.AppLink)
}

// ResNetKeysRow is one key kind of the inventory.
type ResNetKeysRow struct {
	Kind        string  `json:"kind"` // e.g. dcf-32→32
	DeriveBeta  bool    `json:"derive_beta"`
	Keys        int     `json:"keys"`
	Seconds     float64 `json:"seconds"`
	KeysPerSec  float64 `json:"keys_per_sec"`
	DealerSec   float64 `json:"dealer_seconds,omitempty"`
	KeyBytes    int     `json:"key_bytes"`
	Verified    int     `json:"verified"`
	VerifyFails int     `json:"verify_failed"`
}

// ResNetKeysReport is what the bench prints.
type ResNetKeysReport struct {
	Model      string          `json:"model"`
	Fraction   float64         `json:"fraction"`
	Path       string          `json:"path"`
	AppLink    string          `json:"app_link"` // as ProcessReport.AppLink
	CPUs       int             `json:"cpus"`
	Rows       []ResNetKeysRow `json:"rows"`
	Keys       int             `json:"keys"`
	Seconds    float64         `json:"seconds"`
	KeysPerSec float64         `json:"keys_per_sec"`
	// Seconds for the whole inventory at this rate (= Seconds when
	// Fraction is 1).
	InventorySeconds float64 `json:"inventory_seconds"`
	KORDTrees        int     `json:"kord_trees"`
	KORDSeconds      float64 `json:"kord_fabric_seconds"`
	RatioToKORD      float64 `json:"ratio_to_kord"` // inventory_seconds / 1.14
	LLAMAGenSeconds  float64 `json:"llama_dealer_gen_seconds"`
	RatioToLLAMAGen  float64 `json:"ratio_to_llama_gen"` // inventory_seconds / 18.54
	// The trusted dealer: fss.BatchGen on every core of this machine,
	// generating both parties' keys of the same kinds and counts, in the
	// same run; nothing shipped (DealerShip1Gbps is what shipping each
	// party its keys over its own 1 Gbit/s link would add, both links at
	// once).
	DealerSeconds   float64 `json:"dealer_seconds,omitempty"`
	DealerPerSec    float64 `json:"dealer_keys_per_sec,omitempty"`
	RatioToDealer   float64 `json:"ratio_to_dealer,omitempty"` // seconds / dealer_seconds
	KeyBytesPerPart int64   `json:"key_bytes_per_party"`
	DealerShip1Gbps float64 `json:"dealer_ship_seconds_1gbps"`
	Verified        int     `json:"verified"`
	VerifyFailed    int     `json:"verify_failed"`
	// PeakRSS is each process's peak resident set in bytes (module0,
	// module1, party0, party1, client), read before the cluster stops.
	PeakRSS map[string]int64 `json:"peak_rss_bytes"`
	// The linear layers' correlations through the same five processes
	// (client.Correlation requests, derived in the modules): the session's
	// weight masks once, then one evaluation's input correlations.
	Correlations          int     `json:"correlations"`
	CorrelationWords      int     `json:"correlation_words_per_party"`
	SessionWeightMaskWord int     `json:"session_weight_mask_words_per_party"`
	WeightMaskSeconds     float64 `json:"session_weight_mask_seconds,omitempty"`
	CorrelationSeconds    float64 `json:"correlation_seconds,omitempty"`
	// KeysAndCorrSeconds is seconds + correlation_seconds: one
	// evaluation's whole material through the five processes.
	KeysAndCorrSeconds float64 `json:"keys_and_correlations_seconds,omitempty"`
	CorrVerified       bool    `json:"fc_correlation_verified,omitempty"`
	CorrelationNote    string  `json:"correlation_note"`
}

// ResNetKeysPath says what the timed path is.
const ResNetKeysPath = "five processes: 2 modules and 2 party daemons as child processes (cmd/kord/internal/cluster, as kord demo), this client on one stream per site; derived-mode requests, every key generated in the modules and received by the client as batches"

// keyGroup is one kind of key of the inventory with its count.
type keyGroup struct {
	p          fss.Params
	deriveBeta bool
	n          int
}

// resnetGroups splits the inventory's keys by kind: ReLU keys are half
// β = 1 (DReLU) and half derived β (the payload key), truncation keys
// β = 1.
func resnetGroups(inv *infer.StreamInventory, frac float64) []keyGroup {
	var out []keyGroup
	for _, k := range inv.KeyKinds() {
		p := inv.KeyParams[k]
		n := int(float64(inv.Keys[k]) * frac)
		if p.InBits == inv.Ring && p.OutBits == inv.Ring {
			out = append(out, keyGroup{p, false, n / 2}, keyGroup{p, true, n - n/2})
		} else {
			out = append(out, keyGroup{p, false, n})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].n > out[j].n })
	return out
}

// ResNetKeys runs the bench; progress goes to stderr.
func ResNetKeys(ctx context.Context, o ResNetKeysConfig, stderr io.Writer) (*ResNetKeysReport, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	say := func(format string, a ...any) { fmt.Fprintf(stderr, format, a...) }
	c, ok := infer.ParseResNetName(o.Model)
	if !ok {
		return nil, fmt.Errorf("--model %q is not a ResNet name", o.Model)
	}
	arch, err := infer.ResNet18(c)
	if err != nil {
		return nil, err
	}
	inv, err := arch.KeyInventory(0)
	if err != nil {
		return nil, err
	}
	rep := &ResNetKeysReport{Model: arch.Name, Fraction: o.Fraction, Path: ResNetKeysPath, AppLink: cluster.AppLinkName(o.AppLink), CPUs: runtime.NumCPU(),
		KORDTrees: infer.KORDResNet18Trees, KORDSeconds: infer.KORDResNet18KeygenSec, LLAMAGenSeconds: LLAMAResNet18GenSec,
		Correlations: inv.Correlations, CorrelationWords: inv.CorrWords, SessionWeightMaskWord: inv.SessionWords,
		CorrelationNote: "correlations: every lowered linear layer's (21 for ResNet-18), through the same processes as the keys; weight masks once per session (not in seconds), input correlations per evaluation (correlation_seconds); each module computes Z = L(A, R) itself"}
	groups := resnetGroups(inv, o.Fraction)
	rng := mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), 0x72657331))
	say("bench resnet18-keys: %d keys of %d kinds; starting 2 modules and 2 parties on loopback… ", func() int {
		n := 0
		for _, g := range groups {
			n += g.n
		}
		return n
	}(), len(groups))
	cl, err := cluster.StartResNet(ctx, "", cluster.Options{Batch: o.Batch, InFlight: o.InFlight, AppUnix: o.AppLink == "unix"})
	if err != nil {
		return nil, fmt.Errorf("starting the cluster: %w", err)
	}
	defer cl.Remove()
	say("paired.\n")
	id := uint64(1)
	var total time.Duration
	for gi, g := range groups {
		row := ResNetKeysRow{Kind: fmt.Sprintf("dcf-%d→%d", g.p.InBits, g.p.OutBits), DeriveBeta: g.deriveBeta, Keys: g.n, KeyBytes: g.p.KeySize()}
		var el time.Duration
		t0 := time.Now()
		for done := 0; done < g.n; {
			n := min(o.Chunk, g.n-done)
			d, ok, bad, err := resnetChunk(ctx, cl.Apps(), g, n, o.PerReq, o.Verify, &id, rng)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", row.Kind, err)
			}
			el += d
			row.Verified += ok
			row.VerifyFails += bad
			done += n
			if time.Since(t0) > 5*time.Second || done == g.n {
				say("  [%d/%d] %-12s β %-7s %9d / %9d keys, %8.0f keys/s\n", gi+1, len(groups), row.Kind, betaName(g.deriveBeta), done, g.n, float64(done)/el.Seconds())
				t0 = time.Now()
			}
		}
		row.Seconds = el.Seconds()
		row.KeysPerSec = float64(g.n) / el.Seconds()
		total += el
		rep.Keys += g.n
		rep.KeyBytesPerPart += int64(g.n) * int64(g.p.KeySize())
		rep.Verified += row.Verified
		rep.VerifyFailed += row.VerifyFails
		rep.Rows = append(rep.Rows, row)
	}
	if !o.NoCorr {
		if err := resnetCorrelations(ctx, cl.Apps(), arch, &id, rep, say); err != nil {
			return nil, err
		}
	}
	rep.PeakRSS = cl.PeakRSS()
	cl.Close()
	rep.Seconds = total.Seconds()
	rep.KeysPerSec = float64(rep.Keys) / rep.Seconds
	rep.InventorySeconds = float64(inv.KeyTotal) / rep.KeysPerSec
	rep.RatioToKORD = rep.InventorySeconds / infer.KORDResNet18KeygenSec
	rep.RatioToLLAMAGen = rep.InventorySeconds / LLAMAResNet18GenSec
	rep.DealerShip1Gbps = float64(rep.KeyBytesPerPart) * 8 / 1e9
	if rep.CorrelationSeconds > 0 {
		rep.KeysAndCorrSeconds = rep.Seconds + rep.CorrelationSeconds
	}
	if !o.NoDealer {
		say("the trusted dealer generating the same keys (fss.BatchGen, %d workers)…\n", runtime.GOMAXPROCS(0))
		var dealer time.Duration
		for i := range rep.Rows {
			d, err := dealerGen(groups[i].p, groups[i].n)
			if err != nil {
				return nil, err
			}
			rep.Rows[i].DealerSec = d.Seconds()
			dealer += d
		}
		rep.DealerSeconds = dealer.Seconds()
		rep.DealerPerSec = float64(rep.Keys) / rep.DealerSeconds
		rep.RatioToDealer = rep.Seconds / rep.DealerSeconds
	}
	return rep, nil
}

func betaName(derive bool) string {
	if derive {
		return "derived"
	}
	return "public"
}

// resnetChunk streams n derived keys of group g through the parties
// (requests of perReq keys), received as client batches, then verifies
// up to verify pairs outside the clock and releases the batches.
func resnetChunk(ctx context.Context, apps [2]*client.Client, g keyGroup, n, perReq, verify int, id *uint64, rng *mrand.Rand) (time.Duration, int, int, error) {
	var reqs [2][]*pb.KeyRequest
	beta := uint64(1)
	for left := n; left > 0; {
		c := min(left, perReq)
		for b := 0; b < 2; b++ {
			if g.deriveBeta {
				reqs[b] = append(reqs[b], client.Derived(*id, g.p, c, 0, true))
			} else {
				reqs[b] = append(reqs[b], client.Derived(*id, g.p, c, beta, false))
			}
		}
		*id++
		left -= c
	}
	el, got, release, err := timedStream(ctx, apps, reqs)
	defer release()
	if err != nil {
		return 0, 0, 0, err
	}
	// replies by id, per site
	type at struct {
		bt    client.Batch
		first int
		n     int
	}
	var where [2]map[uint64]at
	count := 0
	for b := range got {
		where[b] = map[uint64]at{}
		for _, bt := range got[b] {
			for r := 0; r < bt.Replies(); r++ {
				rp := bt.Reply(r)
				if rp.Err != nil {
					return 0, 0, 0, fmt.Errorf("site %d, request %d: %w", b, rp.ID, rp.Err)
				}
				where[b][rp.ID] = at{bt, rp.First, rp.N}
				if b == 0 {
					count += rp.N
				}
			}
		}
	}
	if count != n {
		return 0, 0, 0, fmt.Errorf("%d keys received, %d asked", count, n)
	}
	ok, bad := 0, 0
	ma, mb := prg.Mask(g.p.InBits), prg.Mask(g.p.OutBits)
	for id0, w0 := range where[0] {
		if ok+bad >= verify {
			break
		}
		w1, found := where[1][id0]
		if !found || w1.n != w0.n {
			bad++
			continue
		}
		j := rng.IntN(w0.n)
		i0, i1 := w0.first+j, w1.first+j
		alpha := (w0.bt.AlphaShare(i0) + w1.bt.AlphaShare(i1)) & ma
		b := beta
		if g.deriveBeta {
			b = (w0.bt.BetaShare(i0) + w1.bt.BetaShare(i1)) & mb
		} else if (w0.bt.BetaShare(i0)+w1.bt.BetaShare(i1))&mb != beta {
			bad++
			continue
		}
		if w0.bt.Counter(i0) == w1.bt.Counter(i1) && checkViews(g.p, w0.bt.Key(i0), w1.bt.Key(i1), alpha, b, rng) {
			ok++
		} else {
			bad++
		}
	}
	return el, ok, bad, nil
}

// dealerGen times a trusted dealer generating n key pairs of shape p
// with fss.BatchGen on every core (inputs drawn once per batch shape: the
// dealer's sampling is not timed).
func dealerGen(p fss.Params, n int) (time.Duration, error) {
	g, err := fss.NewBatchGen(p, fss.BatchOptions{})
	if err != nil {
		return 0, err
	}
	b := 16 * GenBatch
	alpha, beta, root0, root1 := Inputs(p, b, 23)
	out0, out1 := make([]byte, b*p.KeySize()), make([]byte, b*p.KeySize())
	t0 := time.Now()
	for done := 0; done < n; done += b {
		k := min(b, n-done)
		if err := g.GenWithRoots(alpha[:k], beta[:k], root0[:k], root1[:k], out0[:k*p.KeySize()], out1[:k*p.KeySize()]); err != nil {
			return 0, err
		}
	}
	return time.Since(t0), nil
}

// Write prints the report as a table, or as JSON.
func (rep *ResNetKeysReport) Write(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(rep)
	}
	fmt.Fprintf(w, "bench resnet18-keys: %s, %.0f%% of the inventory's %s keys, %d CPUs; application link %s\n", rep.Model, 100*rep.Fraction, "DCF", rep.CPUs, rep.AppLink)
	fmt.Fprintf(w, "%-12s %-8s %10s %9s %12s %10s %9s\n", "kind", "β", "keys", "seconds", "keys/s", "dealer s", "verified")
	for _, r := range rep.Rows {
		fmt.Fprintf(w, "%-12s %-8s %10d %9.2f %12.0f %10.2f %9d\n", r.Kind, betaName(r.DeriveBeta), r.Keys, r.Seconds, r.KeysPerSec, r.DealerSec, r.Verified)
	}
	fmt.Fprintf(w, "total %d keys in %.2f s through five processes: %.0f keys/s; whole inventory %.2f s = %.2f× KORD's %.2f s, %.2f× LLAMA's dealer %.2f s\n",
		rep.Keys, rep.Seconds, rep.KeysPerSec, rep.InventorySeconds, rep.RatioToKORD, rep.KORDSeconds, rep.RatioToLLAMAGen, rep.LLAMAGenSeconds)
	if rep.DealerSeconds > 0 {
		fmt.Fprintf(w, "trusted dealer (fss.BatchGen, this machine, same keys): %.2f s, %.0f keys/s; five processes / dealer = %.2f; shipping %d bytes to each party at 1 Gbit/s would add %.1f s\n",
			rep.DealerSeconds, rep.DealerPerSec, rep.RatioToDealer, rep.KeyBytesPerPart, rep.DealerShip1Gbps)
	}
	fmt.Fprintf(w, "peak RSS (MiB): module0 %d, module1 %d, party0 %d, party1 %d, client %d\n", rep.PeakRSS["module0"]>>20, rep.PeakRSS["module1"]>>20,
		rep.PeakRSS["party0"]>>20, rep.PeakRSS["party1"]>>20, rep.PeakRSS["client"]>>20)
	fmt.Fprintf(w, "verified %d pairs, %d failed\n", rep.Verified, rep.VerifyFailed)
	if rep.CorrelationSeconds > 0 {
		fmt.Fprintf(w, "correlations through the same processes: %d weight masks (%d words/party) in %.2f s once per session; %d input correlations (%d words/party) in %.2f s per evaluation (fc verified: %v); keys + correlations %.2f s\n",
			rep.Correlations, rep.SessionWeightMaskWord, rep.WeightMaskSeconds, rep.Correlations, rep.CorrelationWords, rep.CorrelationSeconds, rep.CorrVerified, rep.KeysAndCorrSeconds)
	}
	return nil
}

// corrBoth asks both sites for correlation c under request id and returns
// both parties' shares and counters.
func corrBoth(ctx context.Context, apps [2]*client.Client, id uint64, c msg.Correlation) ([2]*msg.CorrShares, [2]uint64, error) {
	var sh [2]*msg.CorrShares
	ctr, err := both.Pair(func(b int) (uint64, error) {
		r, err := apps[b].Get(ctx, client.Correlation(id, c))
		switch {
		case err != nil:
			return 0, err
		case r.Err != nil:
			return 0, r.Err
		case len(r.Shares) != 1 || r.Shares[0].Corr == nil:
			return 0, errors.New("the reply holds no correlation")
		}
		sh[b] = r.Shares[0].Corr
		return r.Shares[0].Counter, nil
	})
	if err != nil {
		sh[0].Wipe()
		sh[1].Wipe()
		return [2]*msg.CorrShares{}, ctr, fmt.Errorf("correlation request %d: %w", id, err)
	}
	if ctr[0] != ctr[1] || sh[0].PairTag != sh[1].PairTag {
		sh[0].Wipe()
		sh[1].Wipe()
		return [2]*msg.CorrShares{}, ctr, fmt.Errorf("correlation request %d: the two sites' shares do not pair", id)
	}
	return sh, ctr, nil
}

// resnetCorrelations requests every linear layer's weight mask (the
// session, timed apart) and then one evaluation's input correlations
// (timed) through the parties, and checks the fully connected layer's
// Z = A·R from both parties' shares outside the clock.
func resnetCorrelations(ctx context.Context, apps [2]*client.Client, arch *infer.Model, id *uint64, rep *ResNetKeysReport, say func(string, ...any)) error {
	corrs, err := arch.Correlations()
	if err != nil {
		return err
	}
	say("  correlations: %d weight masks (session), then %d input correlations… ", len(corrs), len(corrs))
	handles := make([]uint64, len(corrs))
	var fcA [2][]uint64
	t0 := time.Now()
	for i, c := range corrs {
		c.Part = msg.CorrWeight
		sh, ctr, err := corrBoth(ctx, apps, *id, c)
		*id++
		if err != nil {
			return fmt.Errorf("weight mask %d: %w", i, err)
		}
		handles[i] = ctr[0]
		if c.Kind == msg.CorrMatVec {
			fcA = [2][]uint64{sh[0].A, sh[1].A}
		} else {
			sh[0].Wipe()
			sh[1].Wipe()
		}
	}
	rep.WeightMaskSeconds = time.Since(t0).Seconds()
	var el time.Duration
	for i, c := range corrs {
		c.Part, c.WeightFrom = msg.CorrInput, handles[i]
		t1 := time.Now()
		sh, _, err := corrBoth(ctx, apps, *id, c)
		el += time.Since(t1)
		*id++
		if err != nil {
			return fmt.Errorf("input correlation %d: %w", i, err)
		}
		if c.Kind == msg.CorrMatVec && fcA[0] != nil {
			rep.CorrVerified = matVecHolds(c, fcA, sh)
			clear(fcA[0])
			clear(fcA[1])
		}
		sh[0].Wipe()
		sh[1].Wipe()
	}
	rep.CorrelationSeconds = el.Seconds()
	say("%.2f s + %.2f s\n", rep.WeightMaskSeconds, rep.CorrelationSeconds)
	if !rep.CorrVerified {
		return errors.New("the fully connected layer's correlation does not satisfy Z = A·R")
	}
	return nil
}

// matVecHolds reports whether Z0 + Z1 = (A0 + A1)·(R0 + R1) mod 2^ℓ.
func matVecHolds(c msg.Correlation, a [2][]uint64, sh [2]*msg.CorrShares) bool {
	m := prg.Mask(c.Ring)
	if len(a[0]) != c.In*c.Out || len(sh[0].R) != c.In || len(sh[0].Z) != c.Out || len(sh[1].R) != c.In || len(sh[1].Z) != c.Out {
		return false
	}
	for o := 0; o < c.Out; o++ {
		var acc uint64
		for i := 0; i < c.In; i++ {
			acc += (a[0][o*c.In+i] + a[1][o*c.In+i]) * (sh[0].R[i] + sh[1].R[i])
		}
		if (acc-sh[0].Z[o]-sh[1].Z[o])&m != 0 {
			return false
		}
	}
	return true
}
