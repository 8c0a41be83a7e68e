package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kord-fss/kord/cmd/kord/internal/bench"
)

// Write prints the report as a table, or as one JSON object.
func (rep *Report) Write(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(rep)
	}
	fmt.Fprintf(w, "kord compare on %s, %d CPUs: dealerless 2PC baseline vs kord (bound mode), per key; n = ℓ; bytes are frame payload sent per party (4-byte length prefixes not counted)\n", rep.Link, rep.CPUs)
	fmt.Fprintf(w, "baseline session setup (once per session, not per key): %d exchanges, %d bytes per party\n", rep.BaselineSetupRounds, rep.BaselineSetupBytes)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "block\tℓ\ttier\tbase rounds\tbase B/party\tbase s\tkord rounds\tkord B/party\tkord s\tbytes ×\ttime ×\tverified\t")
	for _, r := range rep.Rows {
		x := ""
		if r.Extrapolated {
			x = " (extrapolated)"
		}
		br := fmt.Sprintf("%.0f", r.BytesRatio)
		if r.KordBytesPerParty == 0 {
			br = "∞" // kord's derived keys cross nothing
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%.4f%s\t%d\t%d\t%.6f\t%s\t%.0f\t%d\t\n", r.Block, r.InBits, r.Tier,
			r.BaselineRounds, r.BaselineBytesPerParty, r.BaselineSeconds, x, r.KordRounds, r.KordBytesPerParty, r.KordSeconds,
			br, r.TimeRatio, r.KeysVerified)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, sk := range rep.Skipped {
		fmt.Fprintf(w, "skipped: %s\n", sk)
	}
	for _, f := range rep.Fits {
		fmt.Fprintf(w, "fit: %s\n", f.Formula)
	}
	fmt.Fprintln(w, "published (Xing et al.; bytes are total per key where quoted, bits/8 from the formula otherwise):")
	for _, p := range rep.Published {
		s := fmt.Sprintf("  %s ℓ=%d: %d rounds", p.Block, p.InBits, p.Rounds)
		if p.Bytes > 0 {
			s += fmt.Sprintf(", %.0f B", p.Bytes)
		}
		if p.LANSecs > 0 {
			s += fmt.Sprintf(", LAN %.3f s, WAN %.3f s", p.LANSecs, p.WANSecs)
		}
		fmt.Fprintln(w, s)
	}
	return nil
}

// Draw plots, per block and width (kord's otp and mac tiers), how many
// times more time and bytes the baseline takes per key than kord, on a
// log scale (bars start at ratio 1), to a PNG file. The row names are
// set at an angle so that long ones (the gates' blocks) do not overlap.
func (rep *Report) Draw(file string) error {
	pl := plot.New()
	pl.Title.Text = fmt.Sprintf("kord compare --link %s (%d CPUs): baseline ÷ kord per key\n(dealerless 2PC baseline against kord; * extrapolated)", rep.Link, rep.CPUs)
	pl.Y.Label.Text = "baseline / kord (log scale)"
	pl.Add(plotter.NewGrid())
	pl.Legend.Top = true
	pl.Legend.Left = true
	var names []string
	series := make([]plotter.Values, 4) // time otp, time mac, bytes otp, bytes mac
	lg := func(x float64) float64 { return math.Max(0, math.Log10(math.Max(x, 1))) }
	for _, r := range rep.Rows {
		switch r.Tier {
		case "otp":
			series[0] = append(series[0], lg(r.TimeRatio))
			series[2] = append(series[2], lg(r.BytesRatio))
			n := fmt.Sprintf("%s-%d", r.Block, r.InBits)
			if r.Extrapolated {
				n += "*"
			}
			names = append(names, n)
		case "mac":
			series[1] = append(series[1], lg(r.TimeRatio))
			series[3] = append(series[3], lg(r.BytesRatio))
		}
	}
	w := vg.Points(9)
	top := 0.0
	for i, label := range []string{"time, kord otp", "time, kord mac", "bytes, kord otp", "bytes, kord mac"} {
		if len(series[i]) != len(names) {
			continue
		}
		bars, err := plotter.NewBarChart(series[i], w)
		if err != nil {
			return err
		}
		bars.LineStyle.Width = 0
		bars.Color = bench.PlotColor(i + 1)
		bars.Offset = vg.Length(float64(i)-1.5) * w
		pl.Add(bars)
		pl.Legend.Add(label, bars)
		for _, v := range series[i] {
			top = math.Max(top, v)
		}
	}
	pl.NominalX(names...)
	pl.X.Tick.Label.Rotation = math.Pi / 5
	pl.X.Tick.Label.XAlign = draw.XRight
	pl.X.Tick.Label.YAlign = draw.YCenter
	pl.Y.Min = 0
	pl.Y.Max = math.Ceil(top) + 1.2 // room for the legend above the bars
	var ticks []plot.Tick
	for e := 0.0; e <= pl.Y.Max; e++ {
		ticks = append(ticks, plot.Tick{Value: e, Label: fmt.Sprintf("%.0f×", math.Pow(10, e))})
	}
	pl.Y.Tick.Marker = plot.ConstantTicks(ticks)
	return pl.Save(12*vg.Inch, 6*vg.Inch, file)
}
