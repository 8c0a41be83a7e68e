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

	"github.com/kord-fss/kord/internal/bench"
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
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%.4f%s\t%d\t%d\t%.6f\t%.0f\t%.0f\t%d\t\n", r.Block, r.InBits, r.Tier,
			r.BaselineRounds, r.BaselineBytesPerParty, r.BaselineSeconds, x, r.KordRounds, r.KordBytesPerParty, r.KordSeconds,
			r.BytesRatio, r.TimeRatio, r.KeysVerified)
	}
	if err := tw.Flush(); err != nil {
		return err
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

// Draw plots seconds per key (log scale) for the baseline and both kord
// tiers, one group per block and width, to a PNG file.
func (rep *Report) Draw(file string) error {
	pl := plot.New()
	pl.Title.Text = fmt.Sprintf("kord compare (%s link, %d CPUs): seconds per key, dealerless 2PC baseline vs kord", rep.Link, rep.CPUs)
	pl.Y.Label.Text = "seconds per key (log)"
	pl.Y.Scale = plot.LogScale{}
	pl.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	pl.Add(plotter.NewGrid())
	pl.Legend.Top = true
	var names []string
	var base, otp, mac plotter.Values
	for _, r := range rep.Rows {
		v := math.Max(r.KordSeconds, 1e-7)
		switch r.Tier {
		case "otp":
			base = append(base, math.Max(r.BaselineSeconds, 1e-7))
			otp = append(otp, v)
			n := fmt.Sprintf("%s-%d", r.Block, r.InBits)
			if r.Extrapolated {
				n += "*"
			}
			names = append(names, n)
		case "mac":
			mac = append(mac, v)
		}
	}
	if len(mac) != len(otp) {
		mac = otp
	}
	w := vg.Points(14)
	for i, s := range []struct {
		v     plotter.Values
		label string
	}{{base, "baseline (2PC over OT; * extrapolated)"}, {otp, "kord otp"}, {mac, "kord mac"}} {
		bars, err := plotter.NewBarChart(s.v, w)
		if err != nil {
			return err
		}
		bars.LineStyle.Width = 0
		bars.Color = bench.PlotColor(i + 1)
		bars.Offset = vg.Length(i-1) * w
		pl.Add(bars)
		pl.Legend.Add(s.label, bars)
	}
	pl.NominalX(names...)
	return pl.Save(10*vg.Inch, 5*vg.Inch, file)
}
