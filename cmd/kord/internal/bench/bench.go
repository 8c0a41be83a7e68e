// Package bench measures kord's batched FSS engine against the raw AES
// kernel bound: key generation, evaluation and full-domain evaluation
// ([Run]), a sweep of batch sizes and workers drawn to a PNG ([GenSweep]),
// and keys per worker fitted to the fabric law ([Inflight]). Each returns a
// report whose JSON is what kord bench prints; kord bench gen, eval,
// evalall and inflight only check their flags and call one of these.
package bench

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
)

// The operations Run measures.
const (
	OpGen     = "gen"
	OpEval    = "eval"
	OpEvalAll = "evalall"
)

// MaxEvalAllBits is the widest input that OpEvalAll accepts.
const MaxEvalAllBits = 28

// Config is one run of Run.
type Config struct {
	Op      string     // OpGen, OpEval or OpEvalAll
	Params  fss.Params // the key shape
	Keys    int        // keys to generate or evaluate, at least 1
	Workers int        // goroutines; 0 = GOMAXPROCS
	// KernelTime is how long the MMO kernel is measured before and after
	// the timed work.
	KernelTime time.Duration
	// Progress, if not nil, receives a progress bar when the run is long
	// enough to deserve one.
	Progress io.Writer
	// Profile is the key profile: "" or ProfileKordV1, or ProfileLlama
	// (OpGen, DCF only): then kord-v1 runs first and the llama profile
	// (EzPC LLAMA's DCF, package fss/llama) right after it on the same
	// workers, and Result reports both.
	Profile string
}

// The key profiles Config.Profile names.
const (
	ProfileKordV1 = "kord-v1"
	ProfileLlama  = "llama"
)

// Result is what kord bench gen/eval/evalall report (and print as JSON).
type Result struct {
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
	// With Profile llama (gen, dcf): the fields above describe the kord-v1
	// run, and these the llama-profile run of the same shape and key
	// count, right after it on the same workers.
	Profile         string  `json:"profile,omitempty"`
	LlamaSeconds    float64 `json:"llama_seconds,omitempty"`
	LlamaKeysPerSec float64 `json:"llama_keys_per_sec,omitempty"`
	LlamaVsKordV1   float64 `json:"llama_vs_kord_v1,omitempty"`
	// The same two runs in CPU time (user + system of this process,
	// cluster.SelfCPU), which a loaded machine moves far less than wall
	// time: each profile's CPU seconds and llama's keys per CPU-second
	// over kord-v1's.
	KordV1CPUSeconds float64 `json:"kord_v1_cpu_seconds,omitempty"`
	LlamaCPUSeconds  float64 `json:"llama_cpu_seconds,omitempty"`
	LlamaVsKordV1CPU float64 `json:"llama_vs_kord_v1_cpu,omitempty"`

	// The kernel measurements before and after the timed work, whose mean
	// is KernelBlocksPerSec (in the text report only).
	KernelBefore float64    `json:"-"`
	KernelAfter  float64    `json:"-"`
	Params       fss.Params `json:"-"`
}

// Workers resolves a worker count: 0 means GOMAXPROCS.
func Workers(w int) int {
	if w == 0 {
		return runtime.GOMAXPROCS(0)
	}
	return w
}

func (c Config) check() error {
	switch {
	case c.Op != OpGen && c.Op != OpEval && c.Op != OpEvalAll:
		return fmt.Errorf("bench: unknown operation %q", c.Op)
	case c.Keys < 1:
		return fmt.Errorf("bench: %d keys, want at least 1", c.Keys)
	case c.Workers < 0:
		return fmt.Errorf("bench: %d workers, want 0 (GOMAXPROCS) or more", c.Workers)
	case c.KernelTime <= 0:
		return fmt.Errorf("bench: the kernel time must be positive")
	case c.Op == OpEvalAll && c.Params.InBits > MaxEvalAllBits:
		return fmt.Errorf("bench: %d input bits is too wide for evalall (at most %d)", c.Params.InBits, MaxEvalAllBits)
	case c.Profile != "" && c.Profile != ProfileKordV1 && c.Profile != ProfileLlama:
		return fmt.Errorf("bench: unknown key profile %q (want kord-v1 or llama)", c.Profile)
	case c.Profile == ProfileLlama && (c.Op != OpGen || c.Params.Type != fss.DCF):
		return fmt.Errorf("bench: the llama profile has only gen of DCF keys")
	}
	return nil
}

// Run measures c.Op on c.Keys keys of c.Params and the MMO kernel on the
// same number of workers, before and after the timed work.
func Run(c Config) (*Result, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	p, op, w := c.Params, c.Op, Workers(c.Workers)
	res := &Result{Op: op, Type: p.Type.String(), InBits: p.InBits, OutBits: p.OutBits,
		Keys: c.Keys, Workers: w, Kernel: prg.Active(), Params: p}
	var bar *progressbar.ProgressBar
	if c.Progress != nil {
		bar = progressbar.NewOptions64(int64(c.Keys),
			progressbar.OptionSetWriter(c.Progress),
			progressbar.OptionSetDescription(fmt.Sprintf("bench %s %v", op, p)),
			progressbar.OptionShowCount(),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionSetVisibility(long(op, p, c.Keys)),
			progressbar.OptionClearOnFinish())
	}
	progress := func(n int) {
		if bar != nil {
			bar.Add(n)
		}
	}
	res.KernelBefore = KernelBlocksPerSec(w, c.KernelTime)
	var elapsed time.Duration
	var err error
	switch op {
	case OpGen:
		res.BlocksPerKey = float64(fss.BlocksPerGenKey(p))
		cpu := cluster.SelfCPU()
		elapsed, err = gen(p, c.Keys, w, progress)
		if c.Profile == ProfileLlama {
			res.KordV1CPUSeconds = (cluster.SelfCPU() - cpu).Seconds()
		}
	case OpEval:
		res.BlocksPerKey = float64(fss.BlocksPerEval(p))
		elapsed, err = eval(p, c.Keys, w, progress)
	case OpEvalAll:
		res.BlocksPerKey = fss.BlocksPerEvalAll(p)
		elapsed, err = evalAll(p, c.Keys, w, progress)
	}
	if err != nil {
		return nil, err
	}
	res.KernelAfter = KernelBlocksPerSec(w, c.KernelTime)
	if c.Profile == ProfileLlama {
		cpu := cluster.SelfCPU()
		el, err := genLlama(p, c.Keys, w)
		if err != nil {
			return nil, err
		}
		res.LlamaCPUSeconds = (cluster.SelfCPU() - cpu).Seconds()
		res.Profile, res.LlamaSeconds = ProfileLlama, el.Seconds()
		res.LlamaKeysPerSec = float64(c.Keys) / res.LlamaSeconds
		if res.LlamaCPUSeconds > 0 && res.KordV1CPUSeconds > 0 {
			res.LlamaVsKordV1CPU = res.KordV1CPUSeconds / res.LlamaCPUSeconds
		}
	}
	if bar != nil {
		bar.Finish()
	}
	res.Seconds = elapsed.Seconds()
	res.KeysPerSec = float64(c.Keys) / res.Seconds
	res.KeysPerSecPerWorker = res.KeysPerSec / float64(w)
	res.KernelBlocksPerSec = (res.KernelBefore + res.KernelAfter) / 2
	res.Ratio = res.KeysPerSec * res.BlocksPerKey / res.KernelBlocksPerSec
	if res.Profile == ProfileLlama {
		res.LlamaVsKordV1 = res.LlamaKeysPerSec / res.KeysPerSec
	}
	return res, nil
}

// WriteText prints r as kord bench gen/eval/evalall does without --json.
func (r *Result) WriteText(w io.Writer) {
	fmt.Fprintf(w, "bench %s %v: %d keys on %d workers, kernel %s, %.3f s\n", r.Op, r.Params, r.Keys, r.Workers, r.Kernel, r.Seconds)
	fmt.Fprintf(w, "  keys/s            %14.0f  (%.0f per worker)\n", r.KeysPerSec, r.KeysPerSecPerWorker)
	fmt.Fprintf(w, "  kernel blocks/s   %14.0f  (%d workers; %.0f before, %.0f after)\n", r.KernelBlocksPerSec, r.Workers, r.KernelBefore, r.KernelAfter)
	fmt.Fprintf(w, "  MMO blocks / key  %14.0f\n", r.BlocksPerKey)
	fmt.Fprintf(w, "  ratio             %14.3f  (keys/s × blocks/key ÷ kernel blocks/s)\n", r.Ratio)
	if r.Profile == ProfileLlama {
		fmt.Fprintf(w, "  llama keys/s      %14.0f  (%.3f s; %.3f of kord-v1's, same run)\n", r.LlamaKeysPerSec, r.LlamaSeconds, r.LlamaVsKordV1)
		if r.LlamaVsKordV1CPU > 0 {
			fmt.Fprintf(w, "  llama per CPU-s   %14.3f  of kord-v1's (%.3f and %.3f CPU s)\n", r.LlamaVsKordV1CPU, r.LlamaCPUSeconds, r.KordV1CPUSeconds)
		}
	}
}

// long reports whether a run is long enough to deserve a progress line.
func long(op string, p fss.Params, keys int) bool {
	switch op {
	case OpGen:
		return keys*p.InBits >= 1<<23
	case OpEval:
		return keys*p.InBits >= 1<<24
	}
	return float64(keys)*fss.BlocksPerEvalAll(p) >= 1<<28
}

// KernelBlocksPerSec runs ExpandSeeds on w goroutines for about d and
// returns the MMO blocks hashed per second in total. Each call hashes
// 2·GroupKeys seeds under two lanes, 256 blocks: the block count of one
// BatchGen level call, as BENCHMARKS.md states.
func KernelBlocksPerSec(w int, d time.Duration) float64 {
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
			// At least one round per worker: a goroutine that starts after d
			// has passed (a loaded machine, a tiny --time) still measures
			// something, so the rate is never zero.
			done := 0
			for done == 0 || time.Since(start) < d {
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

// Inputs draws k random points and root seeds from seed (not secret: a
// benchmark's inputs).
func Inputs(p fss.Params, k int, seed uint64) (alpha, beta []uint64, root0, root1 []prg.Block) {
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

// GenBatch is how many keys one BatchGen call makes per worker in the
// benchmark; the output buffers are reused, as a dealer streaming keys
// out would. Each worker's share (about 1.1 MB of DPF-32 key pairs) stays
// in its core's L2, and the fork and join of a call amortize over as many
// keys per worker at every worker count (with a fixed 1024 keys a call,
// two workers made 4.6–6.2 M DPF-32 keys/s here, with this 6.2–6.7 M).
const GenBatch = 1024

// gen times the generation of k key pairs on w workers.
func gen(p fss.Params, k, w int, progress func(int)) (time.Duration, error) {
	g, err := fss.NewBatchGen(p, fss.BatchOptions{Workers: w})
	if err != nil {
		return 0, err
	}
	b := min(k, GenBatch*g.Workers())
	alpha, beta, root0, root1 := Inputs(p, b, 1)
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

// keys makes k keys of party 0 (untimed set-up) and random points.
func keys(p fss.Params, k int) ([]*fss.Key, []uint64, error) {
	alpha, beta, root0, root1 := Inputs(p, k, 2)
	out0, out1 := make([]byte, k*p.KeySize()), make([]byte, k*p.KeySize())
	g, err := fss.NewBatchGen(p, fss.BatchOptions{})
	if err != nil {
		return nil, nil, err
	}
	if err := g.GenWithRoots(alpha, beta, root0, root1, out0, out1); err != nil {
		return nil, nil, err
	}
	ks := make([]*fss.Key, k)
	xs := make([]uint64, k)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range ks {
		if ks[i], err = fss.ParseKey(out0[i*p.KeySize() : (i+1)*p.KeySize()]); err != nil {
			return nil, nil, err
		}
		xs[i] = r.Uint64() & prg.Mask(p.InBits)
	}
	return ks, xs, nil
}

// parallel runs job(lo, hi) over [0, k) in chunks of `chunk` on w
// goroutines and returns the wall time.
func parallel(k, w, chunk int, job func(worker, lo, hi int) error) (time.Duration, error) {
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

// eval times batched evaluation of k keys at one point each.
func eval(p fss.Params, k, w int, progress func(int)) (time.Duration, error) {
	ks, xs, err := keys(p, k)
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
	return parallel(k, w, 1024, func(worker, lo, hi int) error {
		err := evals[worker].Eval(ks[lo:hi], xs[lo:hi], out[lo:hi])
		progress(hi - lo)
		return err
	})
}

// evalAll times full-domain evaluation of k keys.
func evalAll(p fss.Params, k, w int, progress func(int)) (time.Duration, error) {
	ks, _, err := keys(p, k)
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
	return parallel(k, w, 1, func(worker, lo, hi int) error {
		for i := lo; i < hi; i++ {
			if err := ks[i].EvalAllBatched(outs[worker]); err != nil {
				return err
			}
			progress(1)
		}
		return nil
	})
}
