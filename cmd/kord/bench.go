package main

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
)

// benchCmd is the parent of the benchmark commands; other command files add
// their own subcommands to it.
var benchCmd = &cobra.Command{
	Use:   "bench",
	Short: "Measure kord's throughput against the raw AES kernel bound",
}

func init() {
	rootCmd.AddCommand(benchCmd)
	benchCmd.AddCommand(
		newBenchFSSCmd("gen", "Batched key generation: K key pairs of one shape"),
		newBenchFSSCmd("eval", "Batched evaluation: K keys, one point each"),
		newBenchFSSCmd("evalall", "Full-domain evaluation: K keys over all 2^ℓ inputs"),
	)
}

// benchFSSOpts are the flags shared by bench gen, eval and evalall.
type benchFSSOpts struct {
	typ      string
	inBits   int
	outBits  int
	keys     int
	workers  int
	json     bool
	kernel   string
	duration time.Duration // kernel measurement time, each side of the run
	plot     string        // gen only: sweep and plot to this file
	profile  string        // gen only: "kord-v1" or "llama" (then both run)
}

// benchResult is what bench gen/eval/evalall report (and print as JSON).
type benchResult struct {
	Op                  string  `json:"op"`
	Type                string  `json:"type"`
	InBits              int     `json:"in_bits"`
	OutBits             int     `json:"out_bits"`
	Keys                int     `json:"keys"`
	Workers             int     `json:"workers"`
	Kernel              string  `json:"kernel"`
	Seconds             float64 `json:"seconds"`
	KeysPerSec          float64 `json:"keys_per_sec"`
	KeysPerSecPerWorker float64 `json:"keys_per_sec_per_worker"`
	KernelBlocksPerSec  float64 `json:"kernel_blocks_per_sec"`
	BlocksPerKey        float64 `json:"blocks_per_key"`
	Ratio               float64 `json:"ratio"`
	// With --profile llama (gen, dcf): the fields above describe the
	// kord-v1 run, and these the llama-profile run of the same shape and
	// key count, right after it on the same workers.
	Profile         string  `json:"profile,omitempty"`
	LlamaSeconds    float64 `json:"llama_seconds,omitempty"`
	LlamaKeysPerSec float64 `json:"llama_keys_per_sec,omitempty"`
	LlamaVsKordV1   float64 `json:"llama_vs_kord_v1,omitempty"`
}

func newBenchFSSCmd(op, short string) *cobra.Command {
	var o benchFSSOpts
	cmd := &cobra.Command{
		Use:   op,
		Short: short,
		Long: short + `.

Reports keys/s in total and per worker, the raw MMO kernel throughput in
blocks/s measured in the same run on the same number of workers (before and
after the timed work, averaged), and the ratio
keys/s × MMO blocks per key ÷ kernel blocks/s: the fraction of the AES bound
reached.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchFSS(cmd.OutOrStdout(), cmd.ErrOrStderr(), op, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.typ, "type", "dpf", "key type: dpf or dcf")
	f.IntVar(&o.inBits, "in-bits", 32, "input width ℓ (1..64; evalall at most 28)")
	f.IntVar(&o.outBits, "out-bits", 32, "output width n (1..64)")
	defKeys := map[string]int{"gen": 200000, "eval": 200000, "evalall": 4}[op]
	f.IntVar(&o.keys, "keys", defKeys, "number of keys")
	f.IntVar(&o.workers, "workers", 0, "goroutines (0 = GOMAXPROCS)")
	f.BoolVar(&o.json, "json", false, "print one JSON object")
	f.StringVar(&o.kernel, "kernel", "", "MMO kernel to use (default: the fastest; see prg kernels)")
	f.DurationVar(&o.duration, "kernel-time", 250*time.Millisecond, "kernel measurement time before and after the run")
	if op == "gen" {
		f.StringVar(&o.plot, "plot", "", "instead of one run, sweep batch sizes and 1..workers and draw keys/s to this PNG (best of five runs per point)")
		f.StringVar(&o.profile, "profile", "kord-v1", "key profile: kord-v1, or llama (EzPC LLAMA's DCF; runs kord-v1 too and reports both)")
	}
	return cmd
}

func runBenchFSS(stdout, stderr io.Writer, op string, o benchFSSOpts) error {
	p, err := parseParams(o.typ, o.inBits, o.outBits)
	if err != nil {
		return err
	}
	if o.keys < 1 {
		return badInput("--keys must be at least 1, got %d", o.keys)
	}
	if o.workers < 0 {
		return badInput("--workers must be 0 (GOMAXPROCS) or more, got %d", o.workers)
	}
	if o.duration <= 0 {
		return badInput("--kernel-time must be positive")
	}
	if op == "evalall" && o.inBits > 28 {
		return badInput("--in-bits %d is too wide for evalall (at most 28)", o.inBits)
	}
	if o.kernel != "" {
		if err := prg.Use(o.kernel); err != nil {
			return badInput("--kernel: %v", err)
		}
	}
	w := o.workers
	if w == 0 {
		w = runtime.GOMAXPROCS(0)
	}
	switch o.profile {
	case "", "kord-v1":
	case "llama":
		if p.Type != fss.DCF {
			return badInput("--profile llama has only --type dcf")
		}
		if o.plot != "" {
			return badInput("--plot sweeps kord-v1 only; drop --profile llama")
		}
	default:
		return badInput("--profile: unknown key profile %q (want kord-v1 or llama)", o.profile)
	}
	if o.plot != "" {
		return benchGenSweep(stdout, p, o.keys, w, o.plot)
	}
	res := benchResult{Op: op, Type: p.Type.String(), InBits: p.InBits, OutBits: p.OutBits,
		Keys: o.keys, Workers: w, Kernel: prg.Active()}
	var bar *progressbar.ProgressBar
	if !o.json {
		bar = progressbar.NewOptions64(int64(o.keys),
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription(fmt.Sprintf("bench %s %v", op, p)),
			progressbar.OptionShowCount(),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionSetVisibility(benchLong(op, p, o.keys)),
			progressbar.OptionClearOnFinish())
	}
	progress := func(n int) {
		if bar != nil {
			bar.Add(n)
		}
	}
	before := kernelBlocksPerSec(w, o.duration)
	var elapsed time.Duration
	switch op {
	case "gen":
		res.BlocksPerKey = float64(fss.BlocksPerGenKey(p))
		elapsed, err = benchGen(p, o.keys, w, progress)
	case "eval":
		res.BlocksPerKey = float64(fss.BlocksPerEval(p))
		elapsed, err = benchEval(p, o.keys, w, progress)
	case "evalall":
		res.BlocksPerKey = fss.BlocksPerEvalAll(p)
		elapsed, err = benchEvalAll(p, o.keys, w, progress)
	}
	if err != nil {
		return err
	}
	after := kernelBlocksPerSec(w, o.duration)
	if o.profile == "llama" {
		el, err := benchGenLlama(p, o.keys, w)
		if err != nil {
			return err
		}
		res.Profile = "llama"
		res.LlamaSeconds = el.Seconds()
		res.LlamaKeysPerSec = float64(o.keys) / res.LlamaSeconds
	}
	if bar != nil {
		bar.Finish()
	}
	res.Seconds = elapsed.Seconds()
	res.KeysPerSec = float64(o.keys) / res.Seconds
	res.KeysPerSecPerWorker = res.KeysPerSec / float64(w)
	res.KernelBlocksPerSec = (before + after) / 2
	res.Ratio = res.KeysPerSec * res.BlocksPerKey / res.KernelBlocksPerSec
	if res.Profile == "llama" {
		res.LlamaVsKordV1 = res.LlamaKeysPerSec / res.KeysPerSec
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		return enc.Encode(res)
	}
	fmt.Fprintf(stdout, "bench %s %v: %d keys on %d workers, kernel %s, %.3f s\n", op, p, o.keys, w, res.Kernel, res.Seconds)
	fmt.Fprintf(stdout, "  keys/s            %14.0f  (%.0f per worker)\n", res.KeysPerSec, res.KeysPerSecPerWorker)
	fmt.Fprintf(stdout, "  kernel blocks/s   %14.0f  (%d workers; %.0f before, %.0f after)\n", res.KernelBlocksPerSec, w, before, after)
	fmt.Fprintf(stdout, "  MMO blocks / key  %14.0f\n", res.BlocksPerKey)
	fmt.Fprintf(stdout, "  ratio             %14.3f  (keys/s × blocks/key ÷ kernel blocks/s)\n", res.Ratio)
	if res.Profile == "llama" {
		fmt.Fprintf(stdout, "  llama keys/s      %14.0f  (%.3f s; %.3f of kord-v1's, same run)\n", res.LlamaKeysPerSec, res.LlamaSeconds, res.LlamaVsKordV1)
	}
	return nil
}

// benchLong reports whether a run is long enough to deserve a progress line.
func benchLong(op string, p fss.Params, keys int) bool {
	switch op {
	case "gen":
		return keys*p.InBits >= 1<<23
	case "eval":
		return keys*p.InBits >= 1<<24
	}
	return float64(keys)*fss.BlocksPerEvalAll(p) >= 1<<28
}

// kernelBlocksPerSec runs ExpandSeeds on w goroutines for about d and
// returns the MMO blocks hashed per second in total. Each call hashes
// 2·GroupKeys seeds under two lanes, 256 blocks: the block count of one
// BatchGen level call, as BENCHMARKS.md states.
func kernelBlocksPerSec(w int, d time.Duration) float64 {
	const n = 2 * fss.GroupKeys
	var total atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := make([]prg.Block, n)
			l, r := make([]prg.Block, n), make([]prg.Block, n)
			for i := range in {
				in[i][0] = byte(i)
			}
			done := 0
			for time.Since(start) < d {
				for range 64 {
					prg.ExpandSeeds(l, r, in)
				}
				done += 64 * 2 * n
			}
			total.Add(int64(done))
		}()
	}
	wg.Wait()
	return float64(total.Load()) / time.Since(start).Seconds()
}

// benchInputs draws k random points and root seeds (not secret: a benchmark).
func benchInputs(p fss.Params, k int, seed uint64) (alpha, beta []uint64, root0, root1 []prg.Block) {
	r := rand.New(rand.NewPCG(seed, 0x6b6f7264))
	alpha, beta = make([]uint64, k), make([]uint64, k)
	root0, root1 = make([]prg.Block, k), make([]prg.Block, k)
	for i := range alpha {
		alpha[i] = r.Uint64() & prg.Mask(p.InBits)
		beta[i] = r.Uint64() & prg.Mask(p.OutBits)
		for j := 0; j < 16; j += 8 {
			a, b := r.Uint64(), r.Uint64()
			for z := 0; z < 8; z++ {
				root0[i][j+z], root1[i][j+z] = byte(a>>(8*z)), byte(b>>(8*z))
			}
		}
	}
	return
}

// benchGenBatch is how many keys one BatchGen call makes per worker in
// the benchmark; the output buffers are reused, as a dealer streaming keys
// out would. Each worker's share (about 1.1 MB of DPF-32 key pairs) stays
// in its core's L2, and the fork and join of a call amortize over as many
// keys per worker at every worker count (with a fixed 1024 keys a call,
// two workers made 4.6–6.2 M DPF-32 keys/s here, with this 6.2–6.7 M).
const benchGenBatch = 1024

// benchGen times the generation of k key pairs on w workers.
func benchGen(p fss.Params, k, w int, progress func(int)) (time.Duration, error) {
	g, err := fss.NewBatchGen(p, fss.BatchOptions{Workers: w})
	if err != nil {
		return 0, err
	}
	b := min(k, benchGenBatch*g.Workers())
	alpha, beta, root0, root1 := benchInputs(p, b, 1)
	out0, out1 := make([]byte, b*p.KeySize()), make([]byte, b*p.KeySize())
	start := time.Now()
	for done := 0; done < k; {
		m := min(b, k-done)
		if err := g.GenWithRoots(alpha[:m], beta[:m], root0[:m], root1[:m], out0[:m*p.KeySize()], out1[:m*p.KeySize()]); err != nil {
			return 0, err
		}
		done += m
		progress(m)
	}
	return time.Since(start), nil
}

// benchKeys makes k keys of party 0 (untimed set-up) and random points.
func benchKeys(p fss.Params, k int) ([]*fss.Key, []uint64, error) {
	alpha, beta, root0, root1 := benchInputs(p, k, 2)
	out0, out1 := make([]byte, k*p.KeySize()), make([]byte, k*p.KeySize())
	g, err := fss.NewBatchGen(p, fss.BatchOptions{})
	if err != nil {
		return nil, nil, err
	}
	if err := g.GenWithRoots(alpha, beta, root0, root1, out0, out1); err != nil {
		return nil, nil, err
	}
	keys := make([]*fss.Key, k)
	xs := make([]uint64, k)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range keys {
		if keys[i], err = fss.ParseKey(out0[i*p.KeySize() : (i+1)*p.KeySize()]); err != nil {
			return nil, nil, err
		}
		xs[i] = r.Uint64() & prg.Mask(p.InBits)
	}
	return keys, xs, nil
}

// benchParallel runs job(lo, hi) over [0, k) in chunks of `chunk` on w
// goroutines and returns the wall time.
func benchParallel(k, w, chunk int, job func(worker, lo, hi int) error) (time.Duration, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, w)
	start := time.Now()
	for i := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(int64(chunk))) - chunk
				if lo >= k {
					return
				}
				if err := job(i, lo, min(k, lo+chunk)); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return el, nil
}

// benchEval times batched evaluation of k keys at one point each.
func benchEval(p fss.Params, k, w int, progress func(int)) (time.Duration, error) {
	keys, xs, err := benchKeys(p, k)
	if err != nil {
		return 0, err
	}
	evals := make([]*fss.BatchEval, w)
	for i := range evals {
		if evals[i], err = fss.NewBatchEval(p); err != nil {
			return 0, err
		}
	}
	out := make([]uint64, k)
	return benchParallel(k, w, 1024, func(worker, lo, hi int) error {
		err := evals[worker].Eval(keys[lo:hi], xs[lo:hi], out[lo:hi])
		progress(hi - lo)
		return err
	})
}

// benchEvalAll times full-domain evaluation of k keys.
func benchEvalAll(p fss.Params, k, w int, progress func(int)) (time.Duration, error) {
	keys, _, err := benchKeys(p, k)
	if err != nil {
		return 0, err
	}
	outs := make([][]uint64, w)
	for i := range outs {
		outs[i] = make([]uint64, 1<<uint(p.InBits))
		// Fault the buffer in before the clock starts: a worker reuses it
		// for every key, so its first-touch page faults are set-up, not
		// evaluation.
		for j := 0; j < len(outs[i]); j += 512 {
			outs[i][j] = 1
		}
	}
	return benchParallel(k, w, 1, func(worker, lo, hi int) error {
		for i := lo; i < hi; i++ {
			if err := keys[i].EvalAllBatched(outs[worker]); err != nil {
				return err
			}
			progress(1)
		}
		return nil
	})
}

// benchGenSweep measures batched generation for batch sizes from 1 key to
// `keys` (powers of four) on 1..maxW workers, prints one line per point and
// draws keys/s against batch size, one line per worker count.
func benchGenSweep(stdout io.Writer, p fss.Params, keys, maxW int, file string) error {
	pl := plot.New()
	pl.Title.Text = fmt.Sprintf("kord batched Gen, %v (kernel %s)", p, prg.Active())
	pl.X.Label.Text = "keys per GenWithRoots call (batch size)"
	pl.Y.Label.Text = "keys/s (millions)"
	pl.X.Scale = plot.LogScale{}
	pl.X.Tick.Marker = plot.LogTicks{Prec: -1}
	pl.Add(plotter.NewGrid())
	pl.Legend.Top = true
	pl.Legend.Left = true
	alpha, beta, root0, root1 := benchInputs(p, keys, 5)
	ks := p.KeySize()
	out0, out1 := make([]byte, keys*ks), make([]byte, keys*ks)
	gens := make([]*fss.BatchGen, maxW)
	for w := range gens {
		g, err := fss.NewBatchGen(p, fss.BatchOptions{Workers: w + 1})
		if err != nil {
			return err
		}
		gens[w] = g
	}
	xys := make([]plotter.XYs, maxW)
	for b := 1; b <= keys; b *= 4 {
		// Best of five runs of at least 100 ms (or all `keys` keys) per
		// point, the worker counts taking turns so that they see the same
		// background load: the machines are shared.
		rates := make([]float64, maxW)
		for range 5 {
			for w, g := range gens {
				done := 0
				start := time.Now()
				for done < keys || time.Since(start) < 100*time.Millisecond {
					if err := g.GenWithRoots(alpha[:b], beta[:b], root0[:b], root1[:b], out0[:b*ks], out1[:b*ks]); err != nil {
						return err
					}
					done += b
				}
				rates[w] = max(rates[w], float64(done)/time.Since(start).Seconds())
			}
		}
		for w, rate := range rates {
			fmt.Fprintf(stdout, "workers %d batch %7d: %10.0f keys/s\n", w+1, b, rate)
			xys[w] = append(xys[w], plotter.XY{X: float64(b), Y: rate / 1e6})
		}
	}
	for w, xy := range xys {
		line, points, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		line.Color = plotColor(w + 1)
		points.Color = plotColor(w + 1)
		pl.Add(line, points)
		pl.Legend.Add(fmt.Sprintf("%d worker(s)", w+1), line, points)
	}
	return pl.Save(7*vg.Inch, 4.5*vg.Inch, file)
}

// plotColor picks a distinct colour per worker count.
func plotColor(i int) color.Color {
	pal := []color.Color{
		color.RGBA{31, 119, 180, 255}, color.RGBA{214, 39, 40, 255},
		color.RGBA{44, 160, 44, 255}, color.RGBA{148, 103, 189, 255},
	}
	return pal[(i-1)%len(pal)]
}
