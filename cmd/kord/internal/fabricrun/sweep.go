// Package fabricrun runs the KORD fabric model (package fabric) the way
// kord fabric does: Sweep reproduces KORD's figures (utilization against
// keys in flight, published rates, mixed DPF/DCF capacity) and can draw
// them; Simulate runs one fabric configuration beside the model. Each
// returns a report whose JSON is what kord fabric prints, and whose
// WriteText is its text output.
package fabricrun

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/kord-fss/kord/fabric"
)

// MaxSweepKeys bounds the keys of each stream Sweep simulates.
const MaxSweepKeys = 1 << 16

// SweepReport is the JSON of kord fabric sweep.
type SweepReport struct {
	Keys           int                `json:"keys"`
	Levels         int                `json:"levels"`
	Knee           float64            `json:"knee"`
	MaxDeviation   float64            `json:"max_deviation"`
	Utilization    []UtilizationPoint `json:"utilization"`
	Rates          map[string]float64 `json:"rates"`
	RatesSim       map[string]float64 `json:"rates_sim"`
	RatesPublished map[string]float64 `json:"rates_published"`
	Capacity       []CapacityPoint    `json:"capacity"`
	Published      map[string]float64 `json:"published"`
	Files          []string           `json:"files,omitempty"`

	// What the report was built from, for the text and the plots.
	points         []fabric.Point
	rates          []fabric.RateFigure
	capSat, capLow []fabric.CapacityPoint
}

// UtilizationPoint is one simulated configuration of the sweep, beside
// the model and the law.
type UtilizationPoint struct {
	Mode   string  `json:"mode"`
	Engine string  `json:"engine"`
	W      int     `json:"W"`
	M      int     `json:"M"`
	Sim    float64 `json:"sim"`
	Model  float64 `json:"model"`
	Law    float64 `json:"law"`
	Cycles int64   `json:"cycles"`
}

// CapacityPoint is one mixed stream on the unified W8 engine.
type CapacityPoint struct {
	M        int     `json:"M"`
	DCF      float64 `json:"dcf_fraction"`
	RateDPF  float64 `json:"rate_dpf"`
	RateDCF  float64 `json:"rate_dcf"`
	Capacity float64 `json:"capacity"`
	Load     float64 `json:"load"`
}

// capacityM are the keys in flight of the two mixed-capacity sets: past
// the knee, and half of it.
const capSatM, capLowM = 16, 6

// Sweep simulates M ∈ fabric.SweepM for each series of the sweep on
// streams of keys keys, the published rates and the mixed capacity of the
// unified W8 engine. If png is not empty it draws the utilization curve
// (KORD's Figure 7) there, and the capacity line to the same name with
// _capacity before the extension, and lists both in Files.
func Sweep(keys int, png string) (*SweepReport, error) {
	if keys < 1 || keys > MaxSweepKeys {
		return nil, fmt.Errorf("fabricrun: %d keys, want 1..%d", keys, MaxSweepKeys)
	}
	if png != "" && !strings.EqualFold(filepath.Ext(png), ".png") {
		return nil, fmt.Errorf("fabricrun: %q is not a file name ending in .png", png)
	}
	pts, err := fabric.Sweep(fabric.SweepM, keys)
	if err != nil {
		return nil, err
	}
	if len(pts) == 0 {
		return nil, errors.New("fabricrun: the sweep has no points")
	}
	rates, err := fabric.PublishedRates()
	if err != nil {
		return nil, err
	}
	fr := []float64{0, 0.25, 0.5, 0.75, 1}
	capSat, err := fabric.MixedCapacity(fr, capSatM, keys)
	if err != nil {
		return nil, err
	}
	capLow, err := fabric.MixedCapacity(fr, capLowM, keys)
	if err != nil {
		return nil, err
	}
	r := &SweepReport{
		Keys: keys, Levels: fabric.DefaultLevels, Knee: pts[0].Knee,
		Rates: map[string]float64{}, RatesSim: map[string]float64{}, RatesPublished: map[string]float64{},
		Published: map[string]float64{
			"single_chain":     fabric.PublishedSingleChain,
			"knee":             fabric.PublishedKnee,
			"knee_utilization": fabric.PublishedKneeUtilization,
			"saturated_m16":    fabric.PublishedSaturated,
			"max_deviation":    fabric.PublishedMaxDeviation,
			"unified_capacity": fabric.PublishedUnifiedW8Rate,
			"fmax_dpf_only_w8": fabric.FmaxDPFOnlyW8,
			"fmax_unified_w8":  fabric.FmaxUnifiedW8,
		},
		points: pts, rates: rates, capSat: capSat, capLow: capLow,
	}
	for _, p := range pts {
		r.MaxDeviation = math.Max(r.MaxDeviation, p.Deviation())
		r.Utilization = append(r.Utilization, UtilizationPoint{
			Mode: p.Mode, Engine: p.Engine, W: p.W, M: p.M, Sim: p.Sim, Model: p.Model, Law: p.Law, Cycles: p.Cycles,
		})
	}
	for _, f := range rates {
		r.Rates[f.Name] = f.Model
		r.RatesSim[f.Name] = f.Sim
		r.RatesPublished[f.Name] = f.Published
	}
	for _, set := range r.capacitySets() {
		for _, c := range set.pts {
			r.Capacity = append(r.Capacity, CapacityPoint{
				M: set.m, DCF: c.DCF, RateDPF: c.RateDPF, RateDCF: c.RateDCF, Capacity: c.Capacity, Load: c.Load(),
			})
		}
	}
	if png != "" {
		capPNG := strings.TrimSuffix(png, filepath.Ext(png)) + "_capacity" + filepath.Ext(png)
		if err := plotUtilization(png, pts, keys); err != nil {
			return nil, fmt.Errorf("writing %s: %w", png, err)
		}
		if err := plotCapacity(capPNG, capSat, capLow); err != nil {
			return nil, fmt.Errorf("writing %s: %w", capPNG, err)
		}
		r.Files = append(r.Files, png, capPNG)
	}
	return r, nil
}

type capacitySet struct {
	m   int
	pts []fabric.CapacityPoint
}

func (r *SweepReport) capacitySets() []capacitySet {
	return []capacitySet{{capSatM, r.capSat}, {capLowM, r.capLow}}
}

// WriteText prints r as kord fabric sweep does without --json.
func (r *SweepReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "Utilization over a stream of %d keys of %d levels (M* = %.0f)\n", r.Keys, fabric.DefaultLevels, r.Knee)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "engine\tmode\tW\tM\tsim %\tmodel %\tlaw %\t|sim-model| pt\tcycles\t")
	var worst float64
	for _, p := range r.points {
		worst = math.Max(worst, p.Deviation())
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.3f\t%d\t\n",
			p.Engine, p.Mode, p.W, p.M, 100*p.Sim, 100*p.Model, 100*p.Law, 100*p.Deviation(), p.Cycles)
	}
	tw.Flush()
	fmt.Fprintf(w, "max |sim - model| = %.3f points (published: <= %.1f)\n\n", 100*worst, 100*fabric.PublishedMaxDeviation)

	fmt.Fprintln(w, "Rates (keys/s)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "figure\tfmax MHz\tpublished\tmodel\tsim\tsim vs published\t")
	for _, f := range r.rates {
		fmt.Fprintf(tw, "%s\t%.1f\t%.2f M\t%.4f M\t%.4f M\t%+.2f%%\t\n", f.Name, f.FmaxHz/1e6,
			f.Published/1e6, f.Model/1e6, f.Sim/1e6, 100*(f.Sim/f.Published-1))
	}
	tw.Flush()

	fmt.Fprintf(w, "\nMixed streams, unified W8 at %.1f MHz: (R_DPF + R_DCF)/%.2f M <= 1\n", fabric.FmaxUnifiedW8/1e6, r.capSat[0].Capacity/1e6)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "M\tDCF share\tR_DPF M/s\tR_DCF M/s\tload\t")
	for _, set := range r.capacitySets() {
		for _, c := range set.pts {
			fmt.Fprintf(tw, "%d\t%.2f\t%.3f\t%.3f\t%.4f\t\n", set.m, c.DCF, c.RateDPF/1e6, c.RateDCF/1e6, c.Load())
		}
	}
	tw.Flush()
	for _, f := range r.Files {
		fmt.Fprintln(w, "wrote", f)
	}
}
