package bench

// The fabric law (package fabric) fitted to the CPU batch engine. One
// worker generates keys with M keys per worker carried through the levels
// together (the group size of fss.BatchGen) for M = 1 … 256; keys/s against
// M is fitted to rate(M) = min(s·M, p) and read as a fabric with W lanes
// and a slot period of Leff, in units of the AES kernel measured in the
// same run.

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kord-fss/kord/fabric"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
)

// InflightM are the keys per worker (M) that Inflight sweeps by default.
var InflightM = []int{1, 2, 4, 8, 16, 32, 64, 128, 256}

// MaxKeysPerWorker bounds the M that Inflight sweeps: every call makes 4·M
// keys at the largest M, and they must stay a few hundred MiB at most.
const MaxKeysPerWorker = 4096

// InflightConfig is one run of Inflight.
type InflightConfig struct {
	Params  fss.Params
	Rounds  int           // measurements per M (the fastest is fitted), at least 1
	MinTime time.Duration // minimum time of one measurement
	// KeysPerWorker are the M to sweep, in any order, repeats ignored
	// (nil: InflightM); see SweepM.
	KeysPerWorker []int
	// PNG, if not empty, is where to draw keys/s against M and the fitted
	// law.
	PNG string
}

// InflightPoint is one measured M.
type InflightPoint struct {
	M          int       `json:"m"`
	KeysPerSec float64   `json:"keys_per_sec"` // fastest round (fitted)
	Median     float64   `json:"median"`       // median over the rounds
	Runs       []float64 `json:"runs"`         // every round's keys/s
	Ratio      float64   `json:"ratio"`        // keys/s × blocks/key ÷ kernel blocks/s (both fastest)
	Law        float64   `json:"law"`          // the fitted law at M
}

// InflightReport is what kord bench inflight --json prints.
type InflightReport struct {
	Type               string          `json:"type"`
	InBits             int             `json:"in_bits"`
	OutBits            int             `json:"out_bits"`
	Kernel             string          `json:"kernel"`
	Workers            int             `json:"workers"`
	KernelBlocksPerSec float64         `json:"kernel_blocks_per_sec"` // fastest round
	KernelMedian       float64         `json:"kernel_median"`
	BlockLatencyNs     float64         `json:"block_latency_ns"` // one MMO block, dependent chain
	C                  int             `json:"c"`                // MMO blocks per level per key
	L                  int             `json:"l"`                // levels per key
	Points             []InflightPoint `json:"points"`
	// The fit, with one "cycle" = one kernel-block slot (1 / kernel
	// blocks/s): W lanes of one block per slot, Leff slots per level.
	W          float64 `json:"W"`
	Leff       float64 `json:"Leff"`
	Knee       float64 `json:"knee"`
	Slope      float64 `json:"slope_keys_per_sec"`
	Plateau    float64 `json:"plateau_keys_per_sec"`
	RMS        float64 `json:"rms_keys_per_sec"`
	RelRMS     float64 `json:"rel_rms"`      // RMS ÷ plateau
	MaxRelDev  float64 `json:"max_rel_dev"`  // max |law − measured| ÷ measured
	LanesBlk   float64 `json:"lanes_blocks"` // W in AES blocks in flight: plateau blocks/s × block latency
	LeffBlk    float64 `json:"leff_blocks"`  // Leff in single-block latencies
	AESBoundKS float64 `json:"aes_bound_keys_per_sec"`

	Params fss.Params `json:"-"`
}

// SweepM checks the keys per worker to sweep and returns them sorted,
// without repeats (InflightM when none are given).
func SweepM(ms []int) ([]int, error) {
	if len(ms) == 0 {
		return InflightM, nil
	}
	ms = slices.Compact(slices.Sorted(slices.Values(ms)))
	if len(ms) < 2 {
		return nil, errors.New("give at least two different values to fit the law")
	}
	if ms[0] < 1 || ms[len(ms)-1] > MaxKeysPerWorker {
		return nil, fmt.Errorf("each value must be 1..%d", MaxKeysPerWorker)
	}
	return ms, nil
}

// Inflight measures batched generation on one worker at every M of
// c.KeysPerWorker, c.Rounds times in turn with the kernel (so that
// background load falls on all points alike), fits the fabric law to each
// point's fastest round and, if c.PNG is set, draws the result.
func Inflight(c InflightConfig) (*InflightReport, error) {
	p := c.Params
	if c.Rounds < 1 {
		return nil, fmt.Errorf("bench: %d rounds, want at least 1", c.Rounds)
	}
	if c.MinTime <= 0 {
		return nil, errors.New("bench: the measurement time must be positive")
	}
	ms, err := SweepM(c.KeysPerWorker)
	if err != nil {
		return nil, fmt.Errorf("bench: keys per worker: %w", err)
	}
	gens := make([]*fss.BatchGen, len(ms))
	for i, m := range ms {
		if gens[i], err = fss.NewBatchGen(p, fss.BatchOptions{Workers: 1, InFlight: m}); err != nil {
			return nil, err
		}
	}
	// Every call makes at least 1024 keys and four groups at the largest M,
	// so the group set-up and the copy-out are paid alike at every M.
	batch := max(1024, 4*ms[len(ms)-1])
	alpha, beta, root0, root1 := Inputs(p, batch, 7)
	ks := p.KeySize()
	out0, out1 := make([]byte, batch*ks), make([]byte, batch*ks)
	runs := make([][]float64, len(ms))
	var kernelRuns []float64
	for range c.Rounds {
		kernelRuns = append(kernelRuns, KernelBlocksPerSec(1, c.MinTime))
		for i, g := range gens {
			done := 0
			start := time.Now()
			for done == 0 || time.Since(start) < c.MinTime {
				if err := g.GenWithRoots(alpha, beta, root0, root1, out0, out1); err != nil {
					return nil, err
				}
				done += batch
			}
			runs[i] = append(runs[i], float64(done)/time.Since(start).Seconds())
		}
	}
	// The machines are shared: background load only ever slows a run down,
	// so the fit uses each point's fastest round, and the kernel's fastest
	// round (measured in the same rounds) as the clock.
	rk := slices.Max(kernelRuns)
	lat := BlockLatency()

	cc, l := fss.BlocksPerGenKey(p)/p.InBits, p.InBits
	res := &InflightReport{Type: p.Type.String(), InBits: p.InBits, OutBits: p.OutBits, Kernel: prg.Active(),
		Workers: 1, KernelBlocksPerSec: rk, KernelMedian: Median(kernelRuns), BlockLatencyNs: lat.Seconds() * 1e9, C: cc, L: l,
		AESBoundKS: rk / float64(cc*l), Params: p}
	pts := make([]fabric.RatePoint, len(ms))
	for i, m := range ms {
		best := slices.Max(runs[i])
		pts[i] = fabric.RatePoint{M: float64(m), Rate: best}
		res.Points = append(res.Points, InflightPoint{M: m, KeysPerSec: best, Median: Median(runs[i]),
			Runs: runs[i], Ratio: best * float64(cc*l) / rk})
	}
	fit, err := fabric.FitLaw(pts, float64(cc), l, rk)
	if err != nil {
		return nil, fmt.Errorf("fitting the law: %w", err)
	}
	res.W, res.Leff, res.Knee = fit.Model.W, fit.Model.Leff, fit.Knee
	res.Slope, res.Plateau, res.RMS = fit.Slope, fit.Plateau, fit.RMS
	res.RelRMS = fit.RMS / fit.Plateau
	for i := range res.Points {
		pt := &res.Points[i]
		pt.Law = math.Min(fit.Slope*float64(pt.M), fit.Plateau)
		res.MaxRelDev = math.Max(res.MaxRelDev, math.Abs(pt.Law-pt.KeysPerSec)/pt.KeysPerSec)
	}
	// In physical terms: blocks/s past the knee times one block's latency
	// is the number of AES blocks kept in flight (Little's law), and a
	// level's latency in single-block latencies.
	res.LanesBlk = fit.Plateau * float64(cc*l) * lat.Seconds()
	res.LeffBlk = 1 / (fit.Slope * float64(l) * lat.Seconds())

	if c.PNG != "" {
		if err := drawInflight(c.PNG, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// WriteText prints r as kord bench inflight does without --json.
func (r *InflightReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "bench inflight %v: 1 worker, kernel %s, %.3g blocks/s (one block alone: %.1f ns)\n",
		r.Params, r.Kernel, r.KernelBlocksPerSec, r.BlockLatencyNs)
	for _, pt := range r.Points {
		fmt.Fprintf(w, "  M %4d: %10.0f keys/s  ratio %.3f  law %10.0f\n", pt.M, pt.KeysPerSec, pt.Ratio, pt.Law)
	}
	fmt.Fprintf(w, "  fit: W = %.3f lanes, Leff = %.1f slots (1 slot = 1 kernel block), knee M* = %.1f, rms %.1f%% of the plateau, worst point %.1f%%\n",
		r.W, r.Leff, r.Knee, 100*r.RelRMS, 100*r.MaxRelDev)
	fmt.Fprintf(w, "  as AES blocks: %.1f blocks in flight past the knee, a level alone takes %.1f single-block latencies\n",
		r.LanesBlk, r.LeffBlk)
}

// Median returns the median of xs (xs is not modified; 0 if it is empty).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// BlockLatency times one MMO block hashed on its own output over and over,
// a dependent chain: the kernel's latency for a single block, call
// included. The fastest of a few runs.
func BlockLatency() time.Duration {
	var b [1]prg.Block
	const n = 1 << 16
	best := time.Duration(math.MaxInt64)
	for range 5 {
		start := time.Now()
		for range n {
			prg.Hash(prg.SeedLeft, b[:], b[:])
		}
		best = min(best, time.Since(start))
	}
	return best / n
}

// drawInflight plots the measured keys/s (fastest and every run) against M
// with the fitted law and the AES bound.
func drawInflight(file string, res *InflightReport) error {
	pl := plot.New()
	pl.Title.Text = fmt.Sprintf("kord CPU batch Gen under the fabric law: %v, 1 worker, %s", res.Params, res.Kernel)
	pl.X.Label.Text = "keys per worker M (--keys-per-worker; BatchOptions.InFlight)"
	pl.Y.Label.Text = "keys/s (millions)"
	pl.X.Scale = plot.LogScale{}
	pl.X.Tick.Marker = plot.LogTicks{Prec: -1}
	xMax := 1.25 * float64(res.Points[len(res.Points)-1].M)
	pl.X.Min, pl.X.Max = 0.8, xMax
	pl.Y.Min, pl.Y.Max = 0, 1.35*res.AESBoundKS/1e6 // room for the legend above the bound
	pl.Add(plotter.NewGrid())
	pl.Legend.Top = true
	pl.Legend.Left = true

	var med, all plotter.XYs
	for _, pt := range res.Points {
		med = append(med, plotter.XY{X: float64(pt.M), Y: pt.KeysPerSec / 1e6})
		for _, r := range pt.Runs {
			all = append(all, plotter.XY{X: float64(pt.M), Y: r / 1e6})
		}
	}
	var law plotter.XYs
	for x := 0.8; x <= xMax; x *= 1.05 {
		law = append(law, plotter.XY{X: x, Y: math.Min(res.Slope*x, res.Plateau) / 1e6})
	}
	bound := plotter.XYs{{X: 0.8, Y: res.AESBoundKS / 1e6}, {X: xMax, Y: res.AESBoundKS / 1e6}}

	blue, red, grey := color.RGBA{31, 119, 180, 255}, color.RGBA{214, 39, 40, 255}, color.RGBA{120, 120, 120, 255}
	runs, err := plotter.NewScatter(all)
	if err != nil {
		return err
	}
	runs.Color = color.NRGBA{31, 119, 180, 110}
	runs.Radius = vg.Points(1.5)
	line, points, err := plotter.NewLinePoints(med)
	if err != nil {
		return err
	}
	line.Color, points.Color = blue, blue
	lawLine, err := plotter.NewLine(law)
	if err != nil {
		return err
	}
	lawLine.Color = red
	lawLine.Width = vg.Points(1.5)
	lawLine.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	boundLine, err := plotter.NewLine(bound)
	if err != nil {
		return err
	}
	boundLine.Color = grey
	boundLine.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	points.Shape = draw.CircleGlyph{}
	pl.Add(boundLine, runs, line, points, lawLine)
	pl.Legend.Add("measured (fastest of the rounds)", line, points)
	pl.Legend.Add("each round", runs)
	pl.Legend.Add(fmt.Sprintf("law min(s·M, p): W = %.2f, Leff = %.0f slots, M* = %.1f", res.W, res.Leff, res.Knee), lawLine)
	pl.Legend.Add(fmt.Sprintf("AES kernel bound (%.2f M keys/s)", res.AESBoundKS/1e6), boundLine)
	return pl.Save(8*vg.Inch, 4.8*vg.Inch, file)
}
