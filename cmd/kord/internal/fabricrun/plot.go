package fabricrun

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kord-fss/kord/fabric"
)

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
