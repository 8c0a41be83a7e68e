package bench

// kord bench deliver: the rate at which an application receives verified
// key pairs, in process (host.LocalPair) and through the five processes of
// kord demo (2 modules, 2 parties, this client), each set against raw
// fss.BatchGen on one worker for the same shape in the same run (issue 19).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"runtime"
	"sync"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

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

// DeliverConfig are the flags of bench deliver.
type DeliverConfig struct {
	Keys     int           // key pairs per row and path
	Batch    int           // keys per batch (parties and the in-process pair)
	InFlight int           // batches outstanding between the parties
	Chunk    int           // keys delivered between two verification pauses
	RawTime  time.Duration // one raw BatchGen measurement
	AppLink  string        // "unix", "tcp" or "slab": how the application reaches the parties
}

// SlabNote says what the slab columns cover (DeliverReport.SlabNote).
const SlabNote = "slab: each module hands its party a bulk's keys as a sealed memfd, read in place, and the party hands a message's keys on to the application " +
	"as that memfd where they are a whole slab (Linux; kord party --module-slab-fds, the default), the application on a Unix socket, reading the keys from it " +
	"(slab_handed_messages counts such messages). processes: --app-link's path with the module's slabs as bytes over its socket (--module-slab-fds=false), " +
	"unless --app-link slab"

// DeliverRow is one shape and tier: raw Gen and both delivered rates.
type DeliverRow struct {
	Type             string  `json:"type"`
	InBits           int     `json:"in_bits"`
	Tier             string  `json:"tier"`
	Mode             string  `json:"mode"`
	RawKeysPerSec    float64 `json:"raw_keys_per_sec"`
	InProcKeysPerSec float64 `json:"in_process_keys_per_sec"`
	ProcKeysPerSec   float64 `json:"processes_keys_per_sec"`
	InProcRatio      float64 `json:"in_process_ratio"`
	ProcRatio        float64 `json:"processes_ratio"`
	PairsVerified    int     `json:"pairs_verified"`
	PairsFailed      int     `json:"pairs_failed"`
	// The transport floor (transportFloor): the row's key-share bytes
	// moved over the processes path's kinds of sockets, both parties at
	// once, with nothing else done — keys/s, and its ratio to raw Gen.
	FloorKeysPerSec float64 `json:"floor_pairs_per_sec"`
	FloorRatio      float64 `json:"floor_ratio"`
	// The slab path (SlabNote): the five processes, each party taking its
	// module's slabs as sealed memfds, the application on a Unix socket.
	SlabKeysPerSec float64 `json:"slab_keys_per_sec"`
	SlabRatio      float64 `json:"slab_ratio"`
	// SlabHanded is how many messages of the slab path brought their keys
	// as the memfd the module wrote them into (the party's hand-off to
	// the application), rather than as bytes.
	SlabHanded uint64 `json:"slab_handed_messages"`
}

// DeliverReport is what bench deliver --json prints.
type DeliverReport struct {
	Rows []DeliverRow `json:"rows"`
	CPUs int          `json:"cpus"`
	// SlabNote says what slab_keys_per_sec measures.
	SlabNote string `json:"slab_note"`
	// AppLink is how the application reached the parties in the
	// processes columns (cluster.AppLinkName; slab: unix, the module's
	// slabs as memfds).
	AppLink string `json:"app_link"`
}

// Defaults of bench deliver: the fastest settings measured on the 2-core
// machine (BENCHMARKS.md, "Delivered rate (issue 19)").
const (
	DeliverDefaultKeys     = 100000
	DeliverDefaultBatch    = 1024
	DeliverDefaultInFlight = 4
	DeliverDefaultChunk    = 16384
)

// Check validates every field; its errors name the field as kord bench
// deliver's flag.
func (o DeliverConfig) Check() error {
	switch {
	case o.Keys < 1:
		return fmt.Errorf("--keys %d must be at least 1", o.Keys)
	case o.Batch < 1 || o.Batch > service.MaxCount:
		return fmt.Errorf("--batch %d is outside 1..%d", o.Batch, service.MaxCount)
	case o.InFlight < 1 || o.InFlight > 1024:
		return fmt.Errorf("--in-flight %d is outside 1..1024", o.InFlight)
	case o.Chunk < 1:
		return fmt.Errorf("--chunk %d must be at least 1", o.Chunk)
	case o.RawTime <= 0:
		return fmt.Errorf("--raw-time must be positive")
	case o.AppLink != "unix" && o.AppLink != "tcp" && o.AppLink != "slab":
		return fmt.Errorf("--app-link %q: want unix, tcp or slab", o.AppLink)
	}
	return nil
}

// deliverClasses are the rows: DPF-32 and DCF-32, each bound tier, derived.
func deliverClasses() []loadgen.Class {
	var out []loadgen.Class
	for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
		for _, t := range []msg.Tier{msg.Keystream, msg.MAC, msg.BatchMAC} {
			out = append(out, loadgen.Class{Mode: msg.Bound, Tier: t, Type: typ, InBits: 32, OutBits: 32})
		}
		out = append(out, loadgen.Class{Mode: msg.Derived, Type: typ, InBits: 32, OutBits: 32})
	}
	return out
}

// Deliver measures every row (DeliverConfig says how); progress goes to
// stderr.
func Deliver(ctx context.Context, o DeliverConfig, stderr io.Writer) (*DeliverReport, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	say := func(format string, a ...any) { fmt.Fprintf(stderr, format, a...) }
	rng := mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), 0x64656c69))
	say("bench deliver: starting 2 modules and 2 parties on loopback… ")
	opts := cluster.Options{Batch: o.Batch, InFlight: o.InFlight, AppUnix: o.AppLink != "tcp"}
	slabFlag := "--module-slab-fds=false"
	if o.AppLink == "slab" {
		slabFlag = "--module-slab-fds"
	}
	opts.PartyArgs = [2][]string{{slabFlag}, {slabFlag}}
	c, err := cluster.Start(ctx, "", opts)
	if err != nil {
		return nil, fmt.Errorf("starting the cluster: %w", err)
	}
	defer c.Remove()
	// The slab path: a second cluster, unless it is the first.
	sc := c
	if o.AppLink != "slab" {
		say("and 2 more with slab memfds… ")
		so := cluster.Options{Batch: o.Batch, InFlight: o.InFlight, AppUnix: true,
			PartyArgs: [2][]string{{"--module-slab-fds"}, {"--module-slab-fds"}}}
		if sc, err = cluster.Start(ctx, "", so); err != nil {
			return nil, fmt.Errorf("starting the slab cluster: %w", err)
		}
		defer sc.Remove()
	}
	lp, err := host.NewLocalPair(ctx, host.LocalOptions{InFlight: o.Batch})
	if err != nil {
		return nil, fmt.Errorf("in-process pair: %w", err)
	}
	defer lp.Close()
	say("paired; warming up… ")
	id := uint64(1)
	if err := deliverWarmUp(ctx, o, lp, c.Apps(), &id, rng); err != nil {
		return nil, err
	}
	if sc != c {
		if err := deliverWarmUp(ctx, o, nil, sc.Apps(), &id, rng); err != nil {
			return nil, fmt.Errorf("slab path: %w", err)
		}
	}
	say("done.\n")
	link := o.AppLink
	if link == "slab" {
		link = "unix"
	}
	rep := &DeliverReport{CPUs: runtime.NumCPU(), SlabNote: SlabNote, AppLink: cluster.AppLinkName(link)}
	for i, k := range deliverClasses() {
		row := DeliverRow{Type: k.Type.String(), InBits: k.InBits, Tier: k.TierID(), Mode: k.Mode.String()}
		say("  [%d/%d] %-18s raw… ", i+1, len(deliverClasses()), k.Name())
		raw, err := rawGenRate(k.Params(), o.RawTime/2)
		if err != nil {
			return nil, fmt.Errorf("%s: raw Gen: %w", k.Name(), err)
		}
		say("in-process… ")
		ipEl, ok, bad, err := deliverPath(o, func(n int) (time.Duration, int, int, error) {
			return inProcessChunk(ctx, lp, k, n, inProcessBulk, rng)
		})
		if err != nil {
			return nil, fmt.Errorf("%s: in process: %w", k.Name(), err)
		}
		row.PairsVerified, row.PairsFailed = ok, bad
		say("processes… ")
		handed := client.HandedMessages()
		prEl, ok, bad, err := deliverPath(o, func(n int) (time.Duration, int, int, error) {
			return processesChunk(ctx, c.Apps(), k, n, o.Batch, &id, rng)
		})
		if err != nil {
			return nil, fmt.Errorf("%s: processes: %w", k.Name(), err)
		}
		row.PairsVerified += ok
		row.PairsFailed += bad
		say("slab… ")
		slEl := prEl
		if sc != c {
			handed = client.HandedMessages()
			if slEl, ok, bad, err = deliverPath(o, func(n int) (time.Duration, int, int, error) {
				return processesChunk(ctx, sc.Apps(), k, n, o.Batch, &id, rng)
			}); err != nil {
				return nil, fmt.Errorf("%s: slab: %w", k.Name(), err)
			}
			row.PairsVerified += ok
			row.PairsFailed += bad
		}
		row.SlabHanded = client.HandedMessages() - handed
		// Raw Gen again after both paths: load from elsewhere only slows
		// a run down, so the row's raw rate is the faster of the two.
		again, err := rawGenRate(k.Params(), o.RawTime/2)
		if err != nil {
			return nil, fmt.Errorf("%s: raw Gen: %w", k.Name(), err)
		}
		raw = max(raw, again)
		say("floor… ")
		floor, err := rowFloor(o, k)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.Name(), err)
		}
		row.FloorKeysPerSec = math.Round(floor)
		row.FloorRatio = round4(row.FloorKeysPerSec / raw)
		row.RawKeysPerSec = math.Round(raw)
		row.InProcKeysPerSec = math.Round(float64(o.Keys) / ipEl.Seconds())
		row.ProcKeysPerSec = math.Round(float64(o.Keys) / prEl.Seconds())
		row.InProcRatio = round4(row.InProcKeysPerSec / raw)
		row.ProcRatio = round4(row.ProcKeysPerSec / raw)
		row.SlabKeysPerSec = math.Round(float64(o.Keys) / slEl.Seconds())
		row.SlabRatio = round4(row.SlabKeysPerSec / raw)
		say("%.0f / %.0f / %.0f / slab %.0f / floor %.0f keys/s\n", row.RawKeysPerSec, row.InProcKeysPerSec, row.ProcKeysPerSec, row.SlabKeysPerSec, row.FloorKeysPerSec)
		rep.Rows = append(rep.Rows, row)
	}
	return rep, nil
}

// deliverWarmUp delivers one untimed chunk of every row's class through
// both paths, so that the first row does not pay for heap growth, first
// page faults and connection set-up that the later rows find done. Its
// pairs are verified too. lp nil: only the processes.
func deliverWarmUp(ctx context.Context, o DeliverConfig, lp *host.LocalPair, apps [2]*client.Client, id *uint64, rng *mrand.Rand) error {
	n := min(o.Chunk, o.Keys)
	for _, k := range deliverClasses() {
		var bad int
		var err error
		if lp != nil {
			_, _, bad, err = inProcessChunk(ctx, lp, k, n, inProcessBulk, rng)
		}
		if err == nil && bad == 0 {
			_, _, bad, err = processesChunk(ctx, apps, k, n, o.Batch, id, rng)
		}
		if err != nil {
			return fmt.Errorf("warm-up, %s: %w", k.Name(), err)
		}
		if bad != 0 {
			return fmt.Errorf("warm-up, %s: %d key pairs failed verification", k.Name(), bad)
		}
	}
	return nil
}

// rowFloor is the transport floor of row k: o.Keys key shares of k's
// size per party (plus a derived key's α and β shares), o.Batch keys a
// write, over the hops of o.AppLink; the faster of two runs (load from
// elsewhere only slows a run down).
func rowFloor(o DeliverConfig, k loadgen.Class) (float64, error) {
	size := k.Params().KeySize()
	if k.Mode == msg.Derived {
		size += 16
	}
	best := 0.0
	for range 2 {
		r, err := transportFloor(o.Keys, size, o.Batch, o.AppLink != "tcp")
		if err != nil {
			return 0, err
		}
		best = max(best, r)
	}
	return best, nil
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// deliverPath delivers o.Keys pairs in chunks of o.Chunk through one path
// and adds up the delivery time and the verification counts.
func deliverPath(o DeliverConfig, chunk func(n int) (time.Duration, int, int, error)) (el time.Duration, ok, bad int, err error) {
	for done := 0; done < o.Keys; {
		n := min(o.Chunk, o.Keys-done)
		d, g, b, err := chunk(n)
		if err != nil {
			return 0, 0, 0, err
		}
		el += d
		ok += g
		bad += b
		done += n
	}
	return el, ok, bad, nil
}

// rawGenRate is fss.BatchGen's keys/s on one worker for p: the fastest of
// three runs of d/3, 1024 keys a call into reused buffers (as bench gen).
func rawGenRate(p fss.Params, d time.Duration) (float64, error) {
	g, err := fss.NewBatchGen(p, fss.BatchOptions{Workers: 1})
	if err != nil {
		return 0, err
	}
	b := GenBatch
	alpha, beta, root0, root1 := Inputs(p, b, 11)
	out0, out1 := make([]byte, b*p.KeySize()), make([]byte, b*p.KeySize())
	best := 0.0
	for range 3 {
		done := 0
		start := time.Now()
		for done == 0 || time.Since(start) < d/3 {
			if err := g.GenWithRoots(alpha, beta, root0, root1, out0, out1); err != nil {
				return 0, err
			}
			done += b
		}
		best = max(best, float64(done)/time.Since(start).Seconds())
	}
	return best, nil
}

// inProcessBulk is the in-process path's keys per bulk: host's
// MeasureDelivered found 4096 the best of the sizes it tried on 2 cores.
const inProcessBulk = 4096

// inProcessChunk delivers n pairs of class k from the in-process pair as
// slabs (host.LocalPair.DerivedSlab, BoundSlab: the bulk path, each
// party's keys at a fixed stride, what an application reads in place), in
// bulks of up to bulk keys delivered back to back; then, outside the
// clock, it checks every pair through key views and hands the slabs back.
func inProcessChunk(ctx context.Context, lp *host.LocalPair, k loadgen.Class, n, bulk int, rng *mrand.Rand) (time.Duration, int, int, error) {
	p := k.Params()
	ma, mb := prg.Mask(p.InBits), prg.Mask(p.OutBits)
	tier := k.Tier
	type delivered struct {
		slabs       [2]*msg.Slab
		alpha, beta []uint64 // bound: the truth; derived: beta[0] is the public β
	}
	var got []delivered
	defer func() {
		for _, d := range got {
			lp.Release(d.slabs)
		}
	}()
	// The requests (shares of random α and β) are made before the clock,
	// as an application has them before it asks.
	var reqs []delivered
	var shares [][2][2][]uint64 // per bulk: [party][α, β]
	for left := n; left > 0; left -= bulk {
		m := min(left, bulk)
		d := delivered{alpha: make([]uint64, m), beta: make([]uint64, m)}
		var sh [2][2][]uint64
		if k.Mode == msg.Derived {
			d.beta[0] = rng.Uint64() & mb
		} else {
			for b := range 2 {
				sh[b] = [2][]uint64{make([]uint64, m), make([]uint64, m)}
			}
			for i := range m {
				d.alpha[i], d.beta[i] = rng.Uint64()&ma, rng.Uint64()&mb
				a0, b0 := rng.Uint64()&ma, rng.Uint64()&mb
				sh[0][0][i], sh[0][1][i] = a0, b0
				sh[1][0][i], sh[1][1][i] = (d.alpha[i]-a0)&ma, (d.beta[i]-b0)&mb
			}
		}
		reqs = append(reqs, d)
		shares = append(shares, sh)
	}
	t0 := time.Now()
	for i, d := range reqs {
		var err error
		if k.Mode == msg.Derived {
			d.slabs, err = lp.DerivedSlab(ctx, p, len(d.alpha), d.beta[0], false)
		} else {
			sh := shares[i]
			d.slabs, err = lp.BoundSlab(ctx, tier, p, [2][]uint64{sh[0][0], sh[1][0]}, [2][]uint64{sh[0][1], sh[1][1]})
		}
		if err != nil {
			return 0, 0, 0, err
		}
		got = append(got, d)
	}
	el := time.Since(t0)
	ok, bad := 0, 0
	for _, d := range got {
		var sl [2]fss.Slab
		var err error
		for b := range 2 {
			if sl[b], err = fss.ViewSlab(d.slabs[b].Keys, p, d.slabs[b].N); err != nil {
				return 0, 0, 0, fmt.Errorf("party %d's slab: %w", b, err)
			}
		}
		for i := range len(d.alpha) {
			alpha, beta := d.alpha[i], d.beta[i]
			good := true
			if k.Mode == msg.Derived {
				alpha, beta = (d.slabs[0].AlphaShares[i]+d.slabs[1].AlphaShares[i])&ma, d.beta[0]
				good = (d.slabs[0].BetaShares[i]+d.slabs[1].BetaShares[i])&mb == beta
			}
			if good && checkViews(p, sl[0].Key(i), sl[1].Key(i), alpha, beta, rng) {
				ok++
			} else {
				bad++
			}
		}
	}
	return el, ok, bad, nil
}

// checkViews checks a delivered pair read in place: party 0's and party
// 1's keys of shape p evaluate to f (fss.Truth) at α, α±1 and a random
// point.
func checkViews(p fss.Params, v0, v1 fss.KeyView, alpha, beta uint64, rng *mrand.Rand) bool {
	m := prg.Mask(p.InBits)
	return v0.Params() == p && fss.CheckPair(v0, v1, alpha, beta, alpha, (alpha+1)&m, (alpha-1)&m, rng.Uint64()&m) == nil
}

// processesChunk streams n pairs of class k through the parties (derived
// requests of up to batch keys each), received as client batches (key
// views over the received messages, no per-key parse), then verifies and
// releases them outside the clock.
func processesChunk(ctx context.Context, apps [2]*client.Client, k loadgen.Class, n, batch int, id *uint64, rng *mrand.Rand) (time.Duration, int, int, error) {
	var reqs [2][]*pb.KeyRequest
	var truth []loadgen.Truth
	var keyTruth [][]loadgen.Truth // bound: per request, per key
	if k.Mode == msg.Bound {
		reqs, keyTruth = boundBulks(k, *id, n, batch, rng)
		truth = make([]loadgen.Truth, len(keyTruth))
	} else {
		reqs, truth = loadgen.RequestsPer(k, *id, n, batch, rng)
	}
	base := *id
	*id += uint64(len(reqs[0]))
	el, got, release, err := timedStream(ctx, apps, reqs)
	defer release()
	if err != nil {
		return 0, 0, 0, err
	}
	// Where each request's keys are, per site.
	type at struct {
		bt     client.Batch
		first  int
		n      int
		failed bool
	}
	var where [2][]at
	for b := range got {
		where[b] = make([]at, len(truth))
		for _, bt := range got[b] {
			for r := 0; r < bt.Replies(); r++ {
				rp := bt.Reply(r)
				if i := rp.ID - base; i < uint64(len(truth)) {
					where[b][i] = at{bt: bt, first: rp.First, n: rp.N, failed: rp.Err != nil}
				}
			}
		}
	}
	p := k.Params()
	ma, mb := prg.Mask(p.InBits), prg.Mask(p.OutBits)
	ok, bad := 0, 0
	for i, t := range truth {
		w0, w1 := where[0][i], where[1][i]
		if w0.failed || w1.failed || w0.n == 0 || w0.n != w1.n {
			bad += max(w0.n, w1.n, 1)
			continue
		}
		for j := 0; j < w0.n; j++ {
			i0, i1 := w0.first+j, w1.first+j
			alpha, beta := t.Alpha, t.Beta
			if keyTruth != nil {
				if j >= len(keyTruth[i]) {
					bad++
					continue
				}
				alpha, beta = keyTruth[i][j].Alpha, keyTruth[i][j].Beta
			}
			good := w0.bt.Counter(i0) == w1.bt.Counter(i1)
			if k.Mode == msg.Derived {
				alpha = (w0.bt.AlphaShare(i0) + w1.bt.AlphaShare(i1)) & ma
				good = good && (w0.bt.BetaShare(i0)+w1.bt.BetaShare(i1))&mb == beta
			}
			if good && checkViews(p, w0.bt.Key(i0), w1.bt.Key(i1), alpha, beta, rng) {
				ok++
			} else {
				bad++
			}
		}
	}
	return el, ok, bad, nil
}

// timedStream is streamBatches timed; release releases every batch
// received (call it in any case, once the batches are no longer read).
func timedStream(ctx context.Context, apps [2]*client.Client, reqs [2][]*pb.KeyRequest) (time.Duration, [2][]client.Batch, func(), error) {
	t0 := time.Now()
	got, err := streamBatches(ctx, apps, reqs)
	el := time.Since(t0)
	release := func() {
		for b := range got {
			for _, bt := range got[b] {
				bt.Release()
			}
		}
	}
	return el, got, release, err
}

// boundBulks is n bound keys of class k as requests of up to per keys
// each (client.BoundBulk: one request per bulk), ids from base, with each
// key's α and β.
func boundBulks(k loadgen.Class, base uint64, n, per int, rng *mrand.Rand) (reqs [2][]*pb.KeyRequest, truth [][]loadgen.Truth) {
	p := k.Params()
	ma, mb := prg.Mask(p.InBits), prg.Mask(p.OutBits)
	for id := base; n > 0; id++ {
		c := min(n, per)
		var sh [2][2][]uint64
		for b := range 2 {
			sh[b] = [2][]uint64{make([]uint64, c), make([]uint64, c)}
		}
		ts := make([]loadgen.Truth, c)
		for i := range c {
			t := loadgen.Truth{Alpha: rng.Uint64() & ma, Beta: rng.Uint64()&mb | 1}
			a0, b0 := rng.Uint64()&ma, rng.Uint64()&mb
			sh[0][0][i], sh[0][1][i] = a0, b0
			sh[1][0][i], sh[1][1][i] = (t.Alpha-a0)&ma, (t.Beta-b0)&mb
			ts[i] = t
		}
		for b := range 2 {
			reqs[b] = append(reqs[b], client.BoundBulk(id, k.Tier, p, sh[b][0], sh[b][1]))
		}
		truth = append(truth, ts)
		n -= c
	}
	return reqs, truth
}

// streamBatches sends both sites' requests on one stream each and receives
// their replies as client batches (RecvBatch: views over the received
// messages, what an application that keeps up with the stream reads),
// until every request of the site is answered.
func streamBatches(ctx context.Context, apps [2]*client.Client, reqs [2][]*pb.KeyRequest) (got [2][]client.Batch, err error) {
	var wg sync.WaitGroup
	var errs [4]error
	for b := 0; b < 2; b++ {
		st, e := apps[b].Stream(ctx)
		if e != nil {
			return got, e
		}
		n := len(reqs[b])
		wg.Add(2)
		go func() {
			defer wg.Done()
			const chunk = 64
			for i := 0; i < n; i += chunk {
				if e := st.SendBatch(reqs[b][i:min(i+chunk, n)]); e != nil {
					errs[2*b] = e
					return
				}
			}
			st.CloseSend()
		}()
		go func() {
			defer wg.Done()
			for seen := 0; seen < n; {
				bt, e := st.RecvBatch()
				if e != nil {
					errs[2*b+1] = e
					return
				}
				got[b] = append(got[b], bt)
				seen += bt.Replies()
			}
		}()
	}
	wg.Wait()
	return got, errors.Join(errs[:]...)
}

// Write prints the report as a table, or as JSON.
func (rep *DeliverReport) Write(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(rep)
	}
	fmt.Fprintf(w, "bench deliver: verified key pairs received by the application, %d CPUs (ratio: to raw BatchGen, 1 worker, same shape)\n", rep.CPUs)
	fmt.Fprintf(w, "%-18s %12s %12s %7s %12s %7s %12s %7s %12s %7s %9s %6s\n", "row", "raw Gen/s", "in-process/s", "ratio", "processes/s", "ratio", "slab/s", "ratio", "floor/s", "ratio", "verified", "failed")
	for _, r := range rep.Rows {
		fmt.Fprintf(w, "%-18s %12.0f %12.0f %7.3f %12.0f %7.3f %12.0f %7.3f %12.0f %7.3f %9d %6d\n", fmt.Sprintf("%s-%d-%s", r.Type, r.InBits, r.Tier),
			r.RawKeysPerSec, r.InProcKeysPerSec, r.InProcRatio, r.ProcKeysPerSec, r.ProcRatio, r.SlabKeysPerSec, r.SlabRatio, r.FloorKeysPerSec, r.FloorRatio, r.PairsVerified, r.PairsFailed)
	}
	fmt.Fprintln(w, rep.SlabNote)
	return nil
}

// Draw draws, per row, raw Gen, the delivered rates (in process, five
// processes, and with slab memfds when measured) and the transport floor
// (when measured) as grouped bars (millions of keys/s) to a PNG file.
func (rep *DeliverReport) Draw(file string) error {
	pl := plot.New()
	pl.Title.Text = fmt.Sprintf("kord bench deliver: verified key pairs delivered vs raw BatchGen (1 worker), %d CPUs", rep.CPUs)
	pl.Title.Padding = vg.Points(8) // clear of the image's top edge
	pl.Y.Label.Text = "keys/s (millions)"
	pl.Add(plotter.NewGrid())
	pl.Legend.Top = true
	var raw, ip, pr, sl, fl plotter.Values
	names := make([]string, len(rep.Rows))
	floor, slab := false, false
	for i, r := range rep.Rows {
		raw = append(raw, r.RawKeysPerSec/1e6)
		ip = append(ip, r.InProcKeysPerSec/1e6)
		pr = append(pr, r.ProcKeysPerSec/1e6)
		sl = append(sl, r.SlabKeysPerSec/1e6)
		fl = append(fl, r.FloorKeysPerSec/1e6)
		floor = floor || r.FloorKeysPerSec > 0
		slab = slab || r.SlabKeysPerSec > 0
		names[i] = fmt.Sprintf("%s-%d\n%s", r.Type, r.InBits, r.Tier)
	}
	type serie struct {
		v     plotter.Values
		label string
	}
	series := []serie{{raw, "raw BatchGen, 1 worker"}, {ip, "in-process (host.LocalPair)"}, {pr, "five processes, module slabs as bytes"}}
	if slab {
		series = append(series, serie{sl, "five processes, slabs as sealed memfds handed on to the application"})
	}
	if floor {
		series = append(series, serie{fl, "transport floor (the key bytes over the same sockets)"})
	}
	w := vg.Points(12)
	for i, s := range series {
		bars, err := plotter.NewBarChart(s.v, w)
		if err != nil {
			return err
		}
		bars.LineStyle.Width = 0
		bars.Color = PlotColor(i + 1)
		bars.Offset = vg.Length(float64(i)-float64(len(series)-1)/2) * w
		pl.Add(bars)
		pl.Legend.Add(s.label, bars)
	}
	pl.NominalX(names...)
	// Half a group's gap at each end, so that the outer groups' bars fit.
	pl.X.Min, pl.X.Max = -0.6, float64(len(names))-0.4
	// Headroom above the tallest bar for the legend (one line a series),
	// so that it never covers a bar.
	top := 0.0
	for _, s := range series {
		for _, v := range s.v {
			top = max(top, v)
		}
	}
	pl.Y.Min, pl.Y.Max = 0, top*(1.12+0.08*float64(len(series)))
	return pl.Save(10*vg.Inch, 5*vg.Inch, file)
}
