package bench

import (
	"fmt"
	"image/color"
	"io"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
)

// GenSweep measures batched generation for batch sizes from 1 key to
// `keys` (powers of four) on 1..maxW workers, prints one line per point to
// w and draws keys/s against batch size, one line per worker count, to the
// PNG file.
func GenSweep(w io.Writer, p fss.Params, keys, maxW int, file string) error {
	if keys < 1 || maxW < 1 {
		return fmt.Errorf("bench: sweep of %d keys on %d workers, want at least 1 of each", keys, maxW)
	}
	pl := plot.New()
	pl.Title.Text = fmt.Sprintf("kord batched Gen, %v (kernel %s)", p, prg.Active())
	pl.Title.Padding = vg.Points(8) // clear of the image's top edge
	pl.X.Label.Text = "keys per GenWithRoots call (batch size; log scale)"
	pl.Y.Label.Text = "keys/s (millions)"
	pl.X.Scale = plot.LogScale{}
	pl.X.Tick.Marker = plot.LogTicks{Prec: -1}
	pl.Add(plotter.NewGrid())
	pl.Legend.Top = true
	pl.Legend.Left = true
	alpha, beta, root0, root1 := Inputs(p, keys, 5)
	ks := p.KeySize()
	out0, out1 := make([]byte, keys*ks), make([]byte, keys*ks)
	gens := make([]*fss.BatchGen, maxW)
	for i := range gens {
		g, err := fss.NewBatchGen(p, fss.BatchOptions{Workers: i + 1})
		if err != nil {
			return err
		}
		gens[i] = g
	}
	xys := make([]plotter.XYs, maxW)
	for b := 1; b <= keys; b *= 4 {
		// Best of five runs of at least 100 ms (or all `keys` keys) per
		// point, the worker counts taking turns so that they see the same
		// background load: the machines are shared.
		rates := make([]float64, maxW)
		for range 5 {
			for i, g := range gens {
				done := 0
				start := time.Now()
				for done < keys || time.Since(start) < 100*time.Millisecond {
					if err := g.GenWithRoots(alpha[:b], beta[:b], root0[:b], root1[:b], out0[:b*ks], out1[:b*ks]); err != nil {
						return err
					}
					done += b
				}
				rates[i] = max(rates[i], float64(done)/time.Since(start).Seconds())
			}
		}
		for i, rate := range rates {
			fmt.Fprintf(w, "workers %d batch %7d: %10.0f keys/s\n", i+1, b, rate)
			xys[i] = append(xys[i], plotter.XY{X: float64(b), Y: rate / 1e6})
		}
	}
	for i, xy := range xys {
		line, points, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		line.Color = PlotColor(i + 1)
		points.Color = PlotColor(i + 1)
		pl.Add(line, points)
		pl.Legend.Add(fmt.Sprintf("%d worker(s)", i+1), line, points)
	}
	return pl.Save(7*vg.Inch, 4.5*vg.Inch, file)
}

// PlotColor picks a distinct colour for series i (from 1), as kord's
// benchmark plots draw worker counts and delivery paths.
func PlotColor(i int) color.Color {
	pal := []color.Color{
		color.RGBA{31, 119, 180, 255}, color.RGBA{214, 39, 40, 255},
		color.RGBA{44, 160, 44, 255}, color.RGBA{148, 103, 189, 255},
		color.RGBA{255, 127, 14, 255}, color.RGBA{127, 127, 127, 255},
	}
	return pal[(i-1)%len(pal)]
}
