package main

// kord fabric: the KORD fabric model (package fabric) from the command line.

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kord-fss/kord/fabric"
)

var fabricCmd = &cobra.Command{
	Use:   "fabric",
	Short: "Provision a KORD key-generation fabric: cycle-level simulation and the analytical model",
	Long: `Simulate the GGM fabric of a KORD-style engine (M key slots, W pipelined
AES-MMO lanes, FCFS scheduler) and compare it with KORD's closed form:
the array saturates at M* = W·Leff/c keys in flight, past which
keys/s = fmax·W/(c·ℓ). See docs/fabric.md.`,
}

func init() {
	fabricCmd.AddCommand(newFabricSweepCmd(), newFabricSimulateCmd())
	rootCmd.AddCommand(fabricCmd)
}

// fabricSweepJSON is the JSON of kord fabric sweep.
type fabricSweepJSON struct {
	Keys           int                  `json:"keys"`
	Levels         int                  `json:"levels"`
	Knee           float64              `json:"knee"`
	MaxDeviation   float64              `json:"max_deviation"`
	Utilization    []fabricPointJSON    `json:"utilization"`
	Rates          map[string]float64   `json:"rates"`
	RatesSim       map[string]float64   `json:"rates_sim"`
	RatesPublished map[string]float64   `json:"rates_published"`
	Capacity       []fabricCapacityJSON `json:"capacity"`
	Published      map[string]float64   `json:"published"`
	Files          []string             `json:"files,omitempty"`
}

type fabricPointJSON struct {
	Mode   string  `json:"mode"`
	Engine string  `json:"engine"`
	W      int     `json:"W"`
	M      int     `json:"M"`
	Sim    float64 `json:"sim"`
	Model  float64 `json:"model"`
	Law    float64 `json:"law"`
	Cycles int64   `json:"cycles"`
}

type fabricCapacityJSON struct {
	M        int     `json:"M"`
	DCF      float64 `json:"dcf_fraction"`
	RateDPF  float64 `json:"rate_dpf"`
	RateDCF  float64 `json:"rate_dcf"`
	Capacity float64 `json:"capacity"`
	Load     float64 `json:"load"`
}

func newFabricSweepCmd() *cobra.Command {
	var (
		asJSON bool
		png    string
		keys   int
	)
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Sweep M ∈ {1,2,4,8,12,16,24,32} for DPF W=4 and unified W=8; reproduce KORD's figures",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if keys < 1 || keys > 1<<16 {
				return badInput("--keys %d: want 1..65536", keys)
			}
			if png != "" && !strings.EqualFold(filepath.Ext(png), ".png") {
				return badInput("--png %q: want a file name ending in .png", png)
			}
			pts, err := fabric.Sweep(fabric.SweepM, keys)
			if err != nil {
				return err
			}
			rates, err := fabric.PublishedRates()
			if err != nil {
				return err
			}
			fr := []float64{0, 0.25, 0.5, 0.75, 1}
			capSat, err := fabric.MixedCapacity(fr, 16, keys)
			if err != nil {
				return err
			}
			capLow, err := fabric.MixedCapacity(fr, 6, keys)
			if err != nil {
				return err
			}
			var files []string
			if png != "" {
				capPNG := strings.TrimSuffix(png, filepath.Ext(png)) + "_capacity" + filepath.Ext(png)
				if err := plotUtilization(png, pts, keys); err != nil {
					return fmt.Errorf("writing %s: %w", png, err)
				}
				if err := plotCapacity(capPNG, capSat, capLow); err != nil {
					return fmt.Errorf("writing %s: %w", capPNG, err)
				}
				files = append(files, png, capPNG)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeSweepJSON(out, keys, pts, rates, capSat, capLow, files)
			}
			writeSweepText(out, keys, pts, rates, capSat, capLow, files)
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.StringVar(&png, "png", "", "draw the utilization curve (Figure 7) to FILE, and the mixed capacity line to FILE with _capacity before .png")
	f.IntVar(&keys, "keys", fabric.SweepKeys, "keys of 32 levels in each simulated stream (256 reproduces KORD's figures)")
	return cmd
}

func writeSweepJSON(w io.Writer, keys int, pts []fabric.Point, rates []fabric.RateFigure, capSat, capLow []fabric.CapacityPoint, files []string) error {
	j := fabricSweepJSON{
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
		Files: files,
	}
	for _, p := range pts {
		j.MaxDeviation = math.Max(j.MaxDeviation, p.Deviation())
		j.Utilization = append(j.Utilization, fabricPointJSON{
			Mode: p.Mode, Engine: p.Engine, W: p.W, M: p.M, Sim: p.Sim, Model: p.Model, Law: p.Law, Cycles: p.Cycles,
		})
	}
	for _, r := range rates {
		j.Rates[r.Name] = r.Model
		j.RatesSim[r.Name] = r.Sim
		j.RatesPublished[r.Name] = r.Published
	}
	for _, set := range []struct {
		m   int
		pts []fabric.CapacityPoint
	}{{16, capSat}, {6, capLow}} {
		for _, c := range set.pts {
			j.Capacity = append(j.Capacity, fabricCapacityJSON{
				M: set.m, DCF: c.DCF, RateDPF: c.RateDPF, RateDCF: c.RateDCF, Capacity: c.Capacity, Load: c.Load(),
			})
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(j)
}

func writeSweepText(w io.Writer, keys int, pts []fabric.Point, rates []fabric.RateFigure, capSat, capLow []fabric.CapacityPoint, files []string) {
	fmt.Fprintf(w, "Utilization over a stream of %d keys of %d levels (M* = %.0f)\n", keys, fabric.DefaultLevels, pts[0].Knee)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "engine\tmode\tW\tM\tsim %\tmodel %\tlaw %\t|sim-model| pt\tcycles\t")
	var worst float64
	for _, p := range pts {
		worst = math.Max(worst, p.Deviation())
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.3f\t%d\t\n",
			p.Engine, p.Mode, p.W, p.M, 100*p.Sim, 100*p.Model, 100*p.Law, 100*p.Deviation(), p.Cycles)
	}
	tw.Flush()
	fmt.Fprintf(w, "max |sim - model| = %.3f points (published: <= %.1f)\n\n", 100*worst, 100*fabric.PublishedMaxDeviation)

	fmt.Fprintln(w, "Rates (keys/s)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "figure\tfmax MHz\tpublished\tmodel\tsim\tsim vs published\t")
	for _, r := range rates {
		fmt.Fprintf(tw, "%s\t%.1f\t%.2f M\t%.4f M\t%.4f M\t%+.2f%%\t\n", r.Name, r.FmaxHz/1e6,
			r.Published/1e6, r.Model/1e6, r.Sim/1e6, 100*(r.Sim/r.Published-1))
	}
	tw.Flush()

	fmt.Fprintf(w, "\nMixed streams, unified W8 at %.1f MHz: (R_DPF + R_DCF)/%.2f M <= 1\n", fabric.FmaxUnifiedW8/1e6, capSat[0].Capacity/1e6)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "M\tDCF share\tR_DPF M/s\tR_DCF M/s\tload\t")
	for _, set := range []struct {
		m   int
		pts []fabric.CapacityPoint
	}{{16, capSat}, {6, capLow}} {
		for _, c := range set.pts {
			fmt.Fprintf(tw, "%d\t%.2f\t%.3f\t%.3f\t%.4f\t\n", set.m, c.DCF, c.RateDPF/1e6, c.RateDCF/1e6, c.Load())
		}
	}
	tw.Flush()
	for _, f := range files {
		fmt.Fprintln(w, "wrote", f)
	}
}

// plotUtilization draws KORD's Figure 7: utilization against keys in flight,
// simulated points over the model's line.
func plotUtilization(file string, pts []fabric.Point, keys int) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("GGM fabric utilization vs keys in flight (Leff = 12, %d keys × 32 levels)", keys)
	p.X.Label.Text = "keys in flight M"
	p.Y.Label.Text = "AES lane utilization (%)"
	p.Title.Padding = vg.Points(8)
	p.X.Min, p.X.Max = 0, 33
	p.Y.Min, p.Y.Max = 0, 105
	p.Add(plotter.NewGrid())
	p.Legend.Top = false
	p.Legend.Left = false
	p.Legend.XOffs = -vg.Points(6)
	p.Legend.YOffs = vg.Points(12)

	knee := pts[0].Knee
	law := plotter.NewFunction(func(m float64) float64 { return 100 * math.Min(1, m/knee) })
	law.Samples = 400
	law.XMin, law.XMax = 0.5, 32.5
	law.Color = color.RGBA{A: 255}
	law.Width = vg.Points(1.2)
	p.Add(law)
	p.Legend.Add(fmt.Sprintf("model: min(1, M/M*), M* = %.0f", knee), law)

	var stream plotter.XYs
	series := map[string]plotter.XYs{}
	var order []string
	for _, pt := range pts {
		name := fmt.Sprintf("sim %s %s W=%d", pt.Engine, pt.Mode, pt.W)
		if _, ok := series[name]; !ok {
			order = append(order, name)
		}
		series[name] = append(series[name], plotter.XY{X: float64(pt.M), Y: 100 * pt.Sim})
		if pt.Engine == "dpf-w4" {
			stream = append(stream, plotter.XY{X: float64(pt.M), Y: 100 * pt.Model})
		}
	}
	sl, err := plotter.NewLine(stream)
	if err != nil {
		return err
	}
	sl.Color = color.RGBA{R: 120, G: 120, B: 120, A: 255}
	sl.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(sl)
	p.Legend.Add(fmt.Sprintf("model over the %d-key stream", keys), sl)

	glyphs := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}}
	colors := []color.Color{
		color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 214, G: 39, B: 40, A: 255},
		color.RGBA{R: 44, G: 160, B: 44, A: 255}, color.RGBA{R: 148, G: 103, B: 189, A: 255},
	}
	sizes := []vg.Length{vg.Points(5), vg.Points(4), vg.Points(3.5), vg.Points(3)}
	for i, name := range order {
		sc, err := plotter.NewScatter(series[name])
		if err != nil {
			return err
		}
		sc.Shape = glyphs[i%len(glyphs)]
		sc.Color = colors[i%len(colors)]
		sc.Radius = sizes[i%len(sizes)]
		p.Add(sc)
		p.Legend.Add(name, sc)
	}
	for _, m := range []int{1, 12, 16} {
		for _, pt := range pts {
			if pt.M == m && pt.Engine == "dpf-w4" {
				l, err := plotter.NewLabels(plotter.XYLabels{
					XYs:    []plotter.XY{{X: float64(m) + 0.5, Y: 100*pt.Sim - 6}},
					Labels: []string{fmt.Sprintf("%.2f%%", 100*pt.Sim)},
				})
				if err != nil {
					return err
				}
				p.Add(l)
			}
		}
	}
	return p.Save(8*vg.Inch, 5*vg.Inch, file)
}

// plotCapacity draws the mixed-stream capacity line R_DPF + R_DCF = C of the
// unified W8 engine with simulated mixed streams at and below the knee.
func plotCapacity(file string, sat, low []fabric.CapacityPoint) error {
	c := sat[0].Capacity / 1e6
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Unified W8 engine at %.1f MHz: mixed DPF/DCF streams (32 levels)", fabric.FmaxUnifiedW8/1e6)
	p.X.Label.Text = "R_DPF (M keys/s)"
	p.Y.Label.Text = "R_DCF (M keys/s)"
	p.Title.Padding = vg.Points(8)
	p.X.Min, p.X.Max = 0, 5.5
	p.Y.Min, p.Y.Max = 0, 5.5
	p.Legend.Top = true
	p.Legend.XOffs = -vg.Points(6)
	p.Add(plotter.NewGrid())

	line, err := plotter.NewLine(plotter.XYs{{X: 0, Y: c}, {X: c, Y: 0}})
	if err != nil {
		return err
	}
	line.Width = vg.Points(1.2)
	p.Add(line)
	p.Legend.Add(fmt.Sprintf("capacity: R_DPF + R_DCF = %.2f M", c), line)
	for i, set := range []struct {
		name string
		pts  []fabric.CapacityPoint
	}{{"sim M = 16 (past the knee)", sat}, {"sim M = 6 (half the knee)", low}} {
		var xy plotter.XYs
		for _, q := range set.pts {
			xy = append(xy, plotter.XY{X: q.RateDPF / 1e6, Y: q.RateDCF / 1e6})
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return err
		}
		if i == 0 {
			sc.Shape, sc.Color = draw.CircleGlyph{}, color.RGBA{R: 214, G: 39, B: 40, A: 255}
		} else {
			sc.Shape, sc.Color = draw.BoxGlyph{}, color.RGBA{R: 31, G: 119, B: 180, A: 255}
		}
		sc.Radius = vg.Points(4)
		p.Add(sc)
		p.Legend.Add(set.name, sc)
	}
	return p.Save(6*vg.Inch, 6*vg.Inch, file)
}

// fabricSimJSON is the JSON of kord fabric simulate.
type fabricSimJSON struct {
	W                 int     `json:"W"`
	M                 int     `json:"M"`
	Latency           int     `json:"latency"`
	Turnaround        int     `json:"turnaround"`
	Leff              int     `json:"leff"`
	Bits              int     `json:"bits"`
	Mode              string  `json:"mode"`
	DCFFraction       float64 `json:"dcf_fraction"`
	Unified           bool    `json:"unified"`
	FmaxMHz           float64 `json:"fmax_mhz"`
	Keys              int     `json:"keys"`
	Cycles            int64   `json:"cycles"`
	Utilization       float64 `json:"utilization"`
	UsefulUtilization float64 `json:"useful_utilization"`
	KeysPerCycle      float64 `json:"keys_per_cycle"`
	KeysPerSecond     float64 `json:"keys_per_second"`
	Model             struct {
		Knee          float64 `json:"knee"`
		Law           float64 `json:"law"`
		Stream        float64 `json:"stream"`
		SaturatedRate float64 `json:"saturated_rate"`
	} `json:"model"`
}

func newFabricSimulateCmd() *cobra.Command {
	var (
		w, m, latency, bits, keys, turnaround int
		mode                                  string
		fmaxMHz, dcf                          float64
		unified, asJSON                       bool
	)
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Simulate one fabric configuration and compare it with the model",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case !(fmaxMHz > 0) || math.IsInf(fmaxMHz, 0):
				return badInput("--fmax %v: want a clock in MHz > 0", fmaxMHz)
			case keys < 1 || keys > 1<<24:
				return badInput("--keys %d: want 1..16777216", keys)
			case bits < 1 || bits > 1024:
				return badInput("--bits %d: want 1..1024", bits)
			case int64(keys)*int64(bits) > 1<<27:
				return badInput("--keys × --bits = %d levels: at most %d per run", int64(keys)*int64(bits), 1<<27)
			}
			cfg := fabric.NewConfig(w, m)
			cfg.Pipeline, cfg.Turnaround, cfg.Levels = latency, turnaround, bits
			if unified {
				cfg.CallsDPF = cfg.CallsDCF
			}
			var frac float64
			switch strings.ToLower(mode) {
			case "dpf":
				frac = 0
			case "dcf":
				frac = 1
			case "mixed":
				if !(dcf >= 0 && dcf <= 1) {
					return badInput("--dcf-fraction %v: want 0..1", dcf)
				}
				frac = dcf
			default:
				return badInput("--mode %q: want dpf, dcf or mixed", mode)
			}
			if err := cfg.Validate(); err != nil {
				return badInput("%v", err)
			}
			stream, err := fabric.MixedStream(keys, frac)
			if err != nil {
				return badInput("%v", err)
			}
			res, err := fabric.Simulate(cfg, stream)
			if err != nil {
				return err
			}
			mod, err := fabric.StreamModel(cfg, stream)
			if err != nil {
				return err
			}
			su, err := mod.StreamUtilization(m, keys)
			if err != nil {
				return err
			}
			j := fabricSimJSON{
				W: w, M: m, Latency: latency, Turnaround: turnaround, Leff: cfg.Leff(), Bits: bits,
				Mode: strings.ToLower(mode), DCFFraction: frac, Unified: unified, FmaxMHz: fmaxMHz, Keys: keys,
				Cycles: res.Cycles, Utilization: res.Utilization, UsefulUtilization: res.UsefulUtilization(),
				KeysPerCycle: res.KeysPerCycle(), KeysPerSecond: res.KeysPerSecond(fmaxMHz * 1e6),
			}
			j.Model.Knee = mod.Knee()
			j.Model.Law = mod.Utilization(float64(m))
			j.Model.Stream = su
			j.Model.SaturatedRate = mod.SaturatedRate(fmaxMHz * 1e6)
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(j)
			}
			fmt.Fprintf(out, "fabric: W=%d lanes, M=%d slots, pipeline %d + turnaround %d (Leff=%d), ℓ=%d, %s stream of %d keys",
				w, m, latency, turnaround, cfg.Leff(), bits, j.Mode, keys)
			if j.Mode == "mixed" {
				fmt.Fprintf(out, " (%.0f%% DCF)", 100*frac)
			}
			if unified {
				fmt.Fprint(out, ", unified (DPF levels issued as 8 calls)")
			}
			fmt.Fprintf(out, "\ncycles       %d\n", res.Cycles)
			fmt.Fprintf(out, "utilization  %.2f%% (useful %.2f%%)\n", 100*res.Utilization, 100*res.UsefulUtilization())
			fmt.Fprintf(out, "keys/s       %.4g at %.1f MHz (%.5f keys/cycle)\n", j.KeysPerSecond, fmaxMHz, j.KeysPerCycle)
			fmt.Fprintf(out, "model        knee M* = %.2f, law %.2f%%, over this stream %.2f%%, saturated %.4g keys/s\n",
				j.Model.Knee, 100*j.Model.Law, 100*su, j.Model.SaturatedRate)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&w, "W", 4, "AES lanes")
	f.IntVar(&m, "M", 12, "key slots (keys in flight)")
	f.IntVar(&latency, "latency", fabric.DefaultPipeline, "AES-MMO pipeline depth in stages (Leff = latency + turnaround)")
	f.IntVar(&turnaround, "turnaround", fabric.DefaultTurnaround, "scheduler turnaround cycles")
	f.IntVar(&bits, "bits", fabric.DefaultLevels, "ℓ: levels per key (domain bits)")
	f.StringVar(&mode, "mode", "dpf", "request stream: dpf, dcf or mixed")
	f.Float64Var(&dcf, "dcf-fraction", 0.5, "share of DCF keys in a mixed stream")
	f.BoolVar(&unified, "unified", false, "unified DPF/DCF engine: issue DPF levels as 8 calls, like DCF")
	f.Float64Var(&fmaxMHz, "fmax", fabric.FmaxDPFOnlyW8/1e6, "clock in MHz")
	f.IntVar(&keys, "keys", fabric.SweepKeys, "keys in the request stream")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
