package fabric

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

// round2 rounds a utilization to a percentage with two decimals, as KORD
// prints it.
func round2(u float64) float64 { return math.Round(u*1e4) / 100 }

func TestSingleChainIsOneOverLeff(t *testing.T) {
	for _, leff := range []struct{ pipe, turn int }{{11, 1}, {5, 1}, {20, 2}} {
		cfg := DPFEngine(4, 1)
		cfg.Pipeline, cfg.Turnaround = leff.pipe, leff.turn
		res, err := Simulate(cfg, UniformStream(DPF, SweepKeys))
		if err != nil {
			t.Fatal(err)
		}
		l := float64(cfg.Leff())
		// One level every Leff cycles, plus the admission cycle per key.
		want := 32 / (32*l + 1)
		if math.Abs(res.Utilization-want) > 1e-4 {
			t.Errorf("Leff %v: single chain %.5f, want %.5f", l, res.Utilization, want)
		}
		if math.Abs(res.Utilization-1/l) > 0.01/l {
			t.Errorf("Leff %v: single chain %.5f, not within 1%% of 1/Leff", l, res.Utilization)
		}
	}
}

func TestPublishedUtilizations(t *testing.T) {
	pts, err := Sweep(SweepM, SweepKeys)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != len(SweepM)*len(SweepSeries()) {
		t.Fatalf("%d points", len(pts))
	}
	for _, p := range pts {
		name := fmt.Sprintf("%s/%s/M=%d", p.Engine, p.Mode, p.M)
		if p.Knee != PublishedKnee {
			t.Errorf("%s: knee %v, want %v", name, p.Knee, PublishedKnee)
		}
		switch {
		case p.M == 1 && round2(p.Sim) != 100*PublishedSingleChain:
			t.Errorf("%s: %.4f%%, published %.2f%%", name, 100*p.Sim, 100*PublishedSingleChain)
		case p.M == 12 && round2(p.Sim) != 100*PublishedKneeUtilization:
			t.Errorf("%s: %.4f%%, published %.2f%%", name, 100*p.Sim, 100*PublishedKneeUtilization)
		case p.M >= 16 && round2(p.Sim) != 100*PublishedSaturated:
			t.Errorf("%s: %.4f%%, published %.2f%%", name, 100*p.Sim, 100*PublishedSaturated)
		}
		if p.Deviation() > PublishedMaxDeviation {
			t.Errorf("%s: sim %.4f vs stream model %.4f", name, p.Sim, p.Model)
		}
		// The bare steady-state law is within 0.3 points everywhere but at
		// the knee, where the partial last generation (256 mod 12 = 4 keys)
		// costs 3.3 points.
		if p.M != PublishedKnee && p.LawDeviation() > PublishedMaxDeviation {
			t.Errorf("%s: sim %.4f vs law %.4f", name, p.Sim, p.Law)
		}
	}
}

func TestSaturationIndependentOfPipelineDepth(t *testing.T) {
	for _, pipe := range []int{3, 11, 25} {
		cfg := DPFEngine(4, 1)
		cfg.Pipeline = pipe
		knee := cfg.Leff() // W·Leff/c with W = c = 4
		for _, m := range []int{knee + 1, knee + 4, 2 * knee} {
			// Whole generations: a partial last one below the knee would
			// leave a tail (StreamCycles models it; see TestStreamModelGrid).
			cfg.M = m
			n := 16 * m
			res, err := Simulate(cfg, UniformStream(DPF, n))
			if err != nil {
				t.Fatal(err)
			}
			// Saturated: the lanes issue back to back; only the admission
			// cycle and the drain of the last level are lost.
			want := float64(n*32) / float64(n*32+cfg.Leff()+1)
			if math.Abs(res.Utilization-want) > 1e-9 {
				t.Errorf("pipeline %d, M %d: %.6f, want %.6f", pipe, m, res.Utilization, want)
			}
		}
		// Below the knee it is not saturated.
		cfg.M = knee - 1
		res, err := Simulate(cfg, UniformStream(DPF, 512))
		if err != nil {
			t.Fatal(err)
		}
		if res.Utilization > float64(knee-1)/float64(knee) {
			t.Errorf("pipeline %d, M %d below knee: %.4f", pipe, knee-1, res.Utilization)
		}
	}
}

func TestConservation(t *testing.T) {
	stream, err := MixedStream(301, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	var nDCF int
	for _, k := range stream {
		if k == DCF {
			nDCF++
		}
	}
	if nDCF != 90 {
		t.Fatalf("mixed stream has %d DCF keys, want 90", nDCF)
	}
	for _, cfg := range []Config{DPFEngine(4, 7), UnifiedW8(20), NewConfig(8, 30)} {
		cfg.Levels = 13
		res, err := Simulate(cfg, stream)
		if err != nil {
			t.Fatal(err)
		}
		wantCalls := int64(cfg.CallsDPF*(301-nDCF)+cfg.CallsDCF*nDCF) * 13
		if res.Keys != 301 || res.KeysDCF != nDCF || res.Levels != 301*13 || res.Calls != wantCalls {
			t.Errorf("W%d: %+v", cfg.W, res)
		}
		if res.UsefulCalls != int64(4*(301-nDCF)+8*nDCF)*13 {
			t.Errorf("W%d: useful calls %d", cfg.W, res.UsefulCalls)
		}
		if res.Utilization <= 0 || res.Utilization > 1 {
			t.Errorf("W%d: utilization %v", cfg.W, res.Utilization)
		}
	}
}

// TestFCFS checks the scheduler against its contract on a mixed stream with
// levels of 4 and 8 calls on 4 lanes: strict first-come-first-served order,
// levels of a key in order and at least Leff apart, and no lane overbooked.
func TestFCFS(t *testing.T) {
	stream, err := MixedStream(200, 0.4)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []int{1, 5, 9, 20} {
		cfg := NewConfig(4, m)
		cfg.Levels = 10
		var grants []Grant
		cfg.Trace = func(g Grant) { grants = append(grants, g) }
		if _, err := Simulate(cfg, stream); err != nil {
			t.Fatal(err)
		}
		if len(grants) != 200*10 {
			t.Fatalf("M %d: %d grants", m, len(grants))
		}
		lanes := map[int64]int{}
		lastAt := map[int]int64{}
		nextLevel := map[int]int{}
		for i, g := range grants {
			if g.ReadyAt > g.Cycle {
				t.Fatalf("M %d: grant %+v before its slot was ready", m, g)
			}
			if i > 0 && g.Cycle < grants[i-1].Cycle {
				t.Fatalf("M %d: grants out of cycle order", m)
			}
			// FCFS: nothing granted later was waiting earlier than g at
			// g's cycle with precedence over g.
			for _, h := range grants[i+1:] {
				if h.Cycle > g.Cycle+200 {
					break
				}
				if h.ReadyAt <= g.Cycle && (h.ReadyAt < g.ReadyAt || (h.ReadyAt == g.ReadyAt && h.Key < g.Key)) {
					t.Fatalf("M %d: %+v granted before older %+v", m, g, h)
				}
			}
			if g.Level != nextLevel[g.Key] {
				t.Fatalf("M %d: key %d level %d, want %d", m, g.Key, g.Level, nextLevel[g.Key])
			}
			nextLevel[g.Key]++
			c := cfg.calls(g.Kind)
			span := max(1, c/cfg.W)
			if g.Level > 0 && g.Cycle-lastAt[g.Key] < int64(cfg.Leff()) {
				t.Fatalf("M %d: key %d levels %d cycles apart", m, g.Key, g.Cycle-lastAt[g.Key])
			}
			lastAt[g.Key] = g.Cycle + int64(span) - 1
			for s := 0; s < span; s++ {
				lanes[g.Cycle+int64(s)] += min(c, cfg.W)
				if lanes[g.Cycle+int64(s)] > cfg.W {
					t.Fatalf("M %d: cycle %d overbooked", m, g.Cycle+int64(s))
				}
			}
		}
		// Keys enter in stream order: the first grant of key i+1 is not
		// before the first grant of key i when slots are FCFS.
		first := map[int]int64{}
		for _, g := range grants {
			if g.Level == 0 {
				first[g.Key] = g.Cycle
			}
		}
		for k := 1; k < 200; k++ {
			if first[k] < first[k-1] {
				t.Fatalf("M %d: key %d started before key %d", m, k, k-1)
			}
		}
	}
}

func TestPublishedRates(t *testing.T) {
	figs, err := PublishedRates()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range figs {
		if d := math.Abs(f.Model-f.Published) / f.Published; d > 0.005 {
			t.Errorf("%s: model %.4g, published %.4g", f.Name, f.Model, f.Published)
		}
		if d := math.Abs(f.Sim-f.Published) / f.Published; d > 0.005 {
			t.Errorf("%s: sim %.4g, published %.4g", f.Name, f.Sim, f.Published)
		}
		if f.Sim > f.Model {
			t.Errorf("%s: sim %.4g above the saturated rate %.4g", f.Name, f.Sim, f.Model)
		}
	}
}

func TestMixedCapacityLine(t *testing.T) {
	fr := []float64{0, 0.1, 0.25, 0.5, 0.75, 0.9, 1}
	pts, err := MixedCapacity(fr, 16, SweepKeys)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		if math.Abs(p.Capacity-PublishedUnifiedW8Rate)/PublishedUnifiedW8Rate > 0.005 {
			t.Errorf("capacity %.4g", p.Capacity)
		}
		if l := p.Load(); l > 1 || l < 0.99 {
			t.Errorf("DCF %.2f: load %.4f, want on the line (<= 1)", p.DCF, l)
		}
		if got := p.RateDCF / (p.RateDPF + p.RateDCF); math.Abs(got-p.DCF) > 0.01 {
			t.Errorf("DCF %.2f: DCF share of the rate %.3f", p.DCF, got)
		}
	}
	// Below the knee a mixed stream still obeys the line, with room left.
	cp, err := MixedCapacity([]float64{0.5}, 6, SweepKeys)
	if err != nil {
		t.Fatal(err)
	}
	if l := cp[0].Load(); l > 0.51 {
		t.Errorf("M 6: load %.4f, want about 1/2", l)
	}
	// On the W4 fabric, where a DCF level costs two cycles, a mixed
	// stream's keys/cycle lies between the two pure streams'.
	var rates []float64
	for _, p := range []float64{0, 0.5, 1} {
		s, err := MixedStream(SweepKeys, p)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Simulate(NewConfig(4, 32), s)
		if err != nil {
			t.Fatal(err)
		}
		rates = append(rates, res.KeysPerCycle())
	}
	if !(rates[0] > rates[1] && rates[1] > rates[2]) {
		t.Errorf("W4 keys/cycle DPF, mixed, DCF: %v", rates)
	}
	// Capacity in DPF-equivalents: R_DPF/cap_DPF + R_DCF/cap_DCF <= 1.
	if l := 0.5*rates[1]/rates[0] + 0.5*rates[1]/rates[2]; l > 1.0001 {
		t.Errorf("W4 mixed load %.4f", l)
	}
}

// TestStreamModelGrid compares the closed form with the simulator beyond
// KORD's sweep, for the fabric's one admission cycle: exact when a level
// fills the lanes for one or more whole cycles, within 2 points when two
// levels share a cycle (the DPF-only W8 engine just past its knee, with an
// odd M and a partial last generation).
func TestStreamModelGrid(t *testing.T) {
	for _, wc := range [][2]int{{4, 4}, {8, 8}, {4, 8}, {2, 8}, {8, 4}} {
		tol := 1e-9
		if wc[1] < wc[0] {
			tol = 0.02
		}
		var worst float64
		for _, n := range []int{1, 5, 37, 256, 300} {
			for m := 1; m <= 40; m++ {
				cfg := NewConfig(wc[0], m)
				cfg.CallsDPF, cfg.Levels = wc[1], 9
				res, err := Simulate(cfg, UniformStream(DPF, n))
				if err != nil {
					t.Fatal(err)
				}
				mod, err := ModelOf(cfg, DPF)
				if err != nil {
					t.Fatal(err)
				}
				u, err := mod.StreamUtilization(m, n)
				if err != nil {
					t.Fatal(err)
				}
				worst = math.Max(worst, math.Abs(u-res.Utilization))
			}
		}
		t.Logf("W %d, c %d: worst |model - sim| %.4f", wc[0], wc[1], worst)
		if worst > tol {
			t.Errorf("W %d, c %d: worst |model - sim| %.4f, tolerance %.g", wc[0], wc[1], worst, tol)
		}
	}
}

func TestModel(t *testing.T) {
	m := Model{W: 4, Leff: 12, C: 4, L: 32}
	if m.Knee() != 12 || m.SingleChain() != 1.0/12 || m.Utilization(6) != 0.5 || m.Utilization(40) != 1 || m.Utilization(0) != 0 {
		t.Errorf("law: knee %v chain %v", m.Knee(), m.SingleChain())
	}
	if r := (Model{W: 8, Leff: 12, C: 4, L: 32}).SaturatedRate(204e6); r != 12.75e6 {
		t.Errorf("saturated rate %v", r)
	}
	if r := m.Rate(6, 1e8); math.Abs(r-0.5*1e8*4/(4*32)) > 1e-6 {
		t.Errorf("rate %v", r)
	}
	for _, bad := range []Model{{}, {W: 1, Leff: 1, C: 1}, {W: -1, Leff: 1, C: 1, L: 1}, {W: 1, Leff: math.NaN(), C: 1, L: 1}, {W: 1, Leff: 1, C: 1, L: 1, Admit: -1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
		if _, err := bad.StreamCycles(4, 4); err == nil {
			t.Errorf("%+v: StreamCycles without error", bad)
		}
	}
	if _, err := m.StreamCycles(0, 4); err == nil {
		t.Error("0 slots accepted")
	}
	if c, err := m.StreamCycles(3, 0); err != nil || c != 0 {
		t.Errorf("empty stream: %v %v", c, err)
	}
}

func TestFitLawRecoversLanesAndLatency(t *testing.T) {
	// Exact law points.
	truth := Model{W: 6, Leff: 20, C: 4, L: 32}
	var pts []RatePoint
	for _, m := range []float64{1, 3, 7, 15, 30, 31, 60, 90} {
		pts = append(pts, RatePoint{M: m, Rate: truth.Rate(m, 1e9)})
	}
	f, err := FitLaw(pts, 4, 32, 1e9)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(f.Model.W-6) > 1e-9 || math.Abs(f.Model.Leff-20) > 1e-9 || math.Abs(f.Knee-30) > 1e-9 || f.RMS > 1e-3 {
		t.Errorf("exact fit: %+v", f)
	}

	// Simulated points: the fit recovers the fabric's W and Leff.
	pts = pts[:0]
	for _, m := range SweepM {
		res, err := Simulate(DPFEngine(4, m), UniformStream(DPF, 1024))
		if err != nil {
			t.Fatal(err)
		}
		pts = append(pts, RatePoint{M: float64(m), Rate: res.KeysPerSecond(FmaxDPFOnlyW8)})
	}
	f, err = FitLaw(pts, 4, 32, FmaxDPFOnlyW8)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(f.Model.W-4)/4 > 0.01 || math.Abs(f.Model.Leff-12)/12 > 0.01 {
		t.Errorf("simulated fit: W %.3f Leff %.3f knee %.2f", f.Model.W, f.Model.Leff, f.Knee)
	}

	for _, bad := range [][]RatePoint{nil, {{1, 1}}, {{2, 1}, {2, 3}}, {{1, 1}, {2, -1}}, {{1, 1}, {math.Inf(1), 1}}} {
		if _, err := FitLaw(bad, 4, 32, 1); err == nil {
			t.Errorf("%v fitted", bad)
		}
	}
	if _, err := FitLaw([]RatePoint{{2, 1}, {2, 3}}, 4, 32, 1); !errors.Is(err, ErrFit) {
		t.Errorf("same-M points: %v, want ErrFit", err)
	}
	if _, err := FitLaw(pts, 0, 32, 1); err == nil {
		t.Error("C = 0 accepted")
	}
}

func TestErrors(t *testing.T) {
	bad := []Config{
		{},
		NewConfig(0, 4),
		NewConfig(4, 0),
		func() Config { c := NewConfig(4, 4); c.Pipeline = 0; return c }(),
		func() Config { c := NewConfig(4, 4); c.Levels = 0; return c }(),
		func() Config { c := NewConfig(4, 4); c.Turnaround = -1; return c }(),
		func() Config { c := NewConfig(4, 4); c.Admit = -1; return c }(),
		func() Config { c := NewConfig(3, 4); return c }(), // 4 calls on 3 lanes
		func() Config { c := NewConfig(4, 4); c.CallsDPF, c.CallsDCF = 0, 0; return c }(),
	}
	for i, c := range bad {
		if _, err := Simulate(c, UniformStream(DPF, 3)); err == nil {
			t.Errorf("config %d accepted", i)
		}
	}
	if _, err := Simulate(DPFOnlyW8(8), UniformStream(DCF, 3)); err == nil {
		t.Error("DPF-only engine accepted a DCF key")
	}
	if _, err := ModelOf(DPFOnlyW8(8), DCF); err == nil {
		t.Error("DPF-only engine has a DCF model")
	}
	if _, err := MixedStream(4, 1.5); err == nil {
		t.Error("DCF fraction 1.5 accepted")
	}
	if _, err := MixedStream(-1, 0); err == nil {
		t.Error("negative stream accepted")
	}
	if _, err := Sweep(SweepM, 0); err == nil {
		t.Error("empty sweep accepted")
	}
	if r, err := Simulate(NewConfig(4, 4), nil); err != nil || r.Cycles != 0 || r.KeysPerCycle() != 0 {
		t.Errorf("empty stream: %+v %v", r, err)
	}
}

func BenchmarkSimulate(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  Config
		dcf  float64
	}{
		{"dpf-w4-M1", DPFEngine(4, 1), 0},
		{"dpf-w4-M12", DPFEngine(4, 12), 0},
		{"dpf-w4-M32", DPFEngine(4, 32), 0},
		{"unified-w8-M32-mixed", UnifiedW8(32), 0.5},
		{"w4-M32-mixed", NewConfig(4, 32), 0.5},
	} {
		b.Run(bc.name, func(b *testing.B) {
			stream, err := MixedStream(SweepKeys, bc.dcf)
			if err != nil {
				b.Fatal(err)
			}
			var cycles, grants int64
			for b.Loop() {
				res, err := Simulate(bc.cfg, stream)
				if err != nil {
					b.Fatal(err)
				}
				cycles += res.Cycles
				grants += res.Levels
			}
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(cycles)/sec, "cycles/s")
			b.ReportMetric(float64(grants)/sec, "grants/s")
		})
	}
}
