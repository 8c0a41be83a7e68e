package fabric

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Model is KORD's analytical model of a key-generation array: W lanes of
// initiation interval 1, a slot that issues one level of C calls every Leff
// cycles, and keys of L levels.
//
// The fields are floats so that the same law can describe, and be fitted to,
// engines whose "lanes" and "latency" are not integers (a CPU batch engine).
type Model struct {
	W     float64 // lanes: AES calls accepted per cycle
	Leff  float64 // cycles between two levels of one slot (pipeline + turnaround)
	C     float64 // AES calls per level
	L     int     // levels per key
	Admit float64 // cycles between a key's retirement and its successor's first issue (finite-stream terms only)
}

// ModelOf is the model of a fabric configuration for keys of kind k. A level
// of c > W calls occupies c/W cycles, so its slot period is Leff + c/W - 1.
func ModelOf(cfg Config, k Kind) (Model, error) {
	if err := cfg.Validate(); err != nil {
		return Model{}, err
	}
	c := cfg.calls(k)
	if c <= 0 {
		return Model{}, fmt.Errorf("fabric: engine does not generate %v keys", k)
	}
	period := float64(cfg.Leff())
	if c > cfg.W {
		period += float64(c/cfg.W - 1)
	}
	return Model{W: float64(cfg.W), Leff: period, C: float64(c), L: cfg.Levels, Admit: float64(cfg.Admit)}, nil
}

// Validate reports whether the model's parameters make sense.
func (m Model) Validate() error {
	switch {
	case !(m.W > 0) || math.IsInf(m.W, 0):
		return fmt.Errorf("fabric: model W = %v, want > 0", m.W)
	case !(m.Leff > 0) || math.IsInf(m.Leff, 0):
		return fmt.Errorf("fabric: model Leff = %v, want > 0", m.Leff)
	case !(m.C > 0) || math.IsInf(m.C, 0):
		return fmt.Errorf("fabric: model C = %v, want > 0", m.C)
	case m.L < 1:
		return fmt.Errorf("fabric: model L = %d, want >= 1", m.L)
	case !(m.Admit >= 0) || math.IsInf(m.Admit, 0):
		return fmt.Errorf("fabric: model Admit = %v, want >= 0", m.Admit)
	}
	return nil
}

// SingleChain is the utilization of one key in flight: C/(W·Leff).
func (m Model) SingleChain() float64 { return m.C / (m.W * m.Leff) }

// Knee is M* = W·Leff/C, the keys in flight at which the lanes saturate.
func (m Model) Knee() float64 { return m.W * m.Leff / m.C }

// Utilization is the steady-state law min(1, M/M*).
func (m Model) Utilization(keysInFlight float64) float64 {
	if !(keysInFlight > 0) {
		return 0
	}
	return math.Min(1, keysInFlight/m.Knee())
}

// SaturatedKeysPerCycle is W/(C·L): keys per cycle past the knee.
func (m Model) SaturatedKeysPerCycle() float64 { return m.W / (m.C * float64(m.L)) }

// SaturatedRate is fmax·W/(C·L) keys/s past the knee; it does not depend on
// the pipeline depth.
func (m Model) SaturatedRate(fmaxHz float64) float64 { return fmaxHz * m.SaturatedKeysPerCycle() }

// Rate is the steady-state keys/s with M keys in flight at clock fmax.
func (m Model) Rate(keysInFlight, fmaxHz float64) float64 {
	return m.Utilization(keysInFlight) * m.SaturatedRate(fmaxHz)
}

// StreamCycles is the closed-form cycle count of a fabric run over a stream
// of n keys with M slots, counted as Simulate counts it (first admission to
// last retirement, inclusive). It is the larger of two bounds:
//
//   - chain-bound: keys run in generations of M; each slot spends
//     L·Leff + Admit cycles per key, and the last key starts at its
//     generation's issue phase;
//   - lane-bound: the lanes issue back to back from cycle Admit, the last
//     (possibly partial) generation of r keys finishing no earlier than its
//     own chains allow, plus the drain of the last level.
//
// For levels that fit the lanes in one cycle or in whole cycles, with one
// kind of key, it equals the simulated count exactly in KORD's sweeps (see
// the tests for the tolerance elsewhere).
func (m Model) StreamCycles(slots, n int) (float64, error) {
	if err := m.Validate(); err != nil {
		return 0, err
	}
	if slots < 1 || n < 0 {
		return 0, fmt.Errorf("fabric: stream of %d keys over %d slots", n, slots)
	}
	if n == 0 {
		return 0, nil
	}
	var (
		o      = m.C / m.W      // lane-cycles per level
		occ    = math.Max(1, o) // cycles a level holds the lanes
		period = m.Leff         // slot period
		l      = float64(m.L)   // levels per key
		g      = (n + slots - 1) / slots
		r      = n - (g-1)*slots // keys in the last generation
		phase  = func(j int) float64 { return math.Floor(float64(j) * o) }
		issue  = func(k int) float64 { return math.Ceil(float64(k) * l * o) } // cycles to issue k keys back to back
	)
	chain := float64(g)*(l*period+m.Admit) + phase(r-1) + 1
	start := m.Admit + issue((g-1)*slots)
	lane := start + math.Max(issue(r)-occ+period+1, phase(r-1)+l*period+1)
	return math.Max(chain, lane), nil
}

// StreamUtilization is the closed-form utilization of a run over n keys with
// M slots: n·L·C / (W·StreamCycles).
func (m Model) StreamUtilization(slots, n int) (float64, error) {
	t, err := m.StreamCycles(slots, n)
	if err != nil || t == 0 {
		return 0, err
	}
	return float64(n) * float64(m.L) * m.C / (m.W * t), nil
}

// RatePoint is one measurement: Rate keys/s with M keys in flight.
type RatePoint struct {
	M    float64
	Rate float64
}

// Fit is the result of FitLaw.
type Fit struct {
	Model   Model   // W and Leff recovered; C and L as given
	Slope   float64 // keys/s per key in flight below the knee: fmax/(Leff·L)
	Plateau float64 // saturated keys/s: fmax·W/(C·L)
	Knee    float64 // Plateau/Slope = W·Leff/C
	RMS     float64 // root-mean-square residual, keys/s
}

// ErrFit is returned when the points cannot determine the law.
var ErrFit = errors.New("fabric: points do not determine a knee")

// FitLaw fits the law rate(M) = min(Slope·M, Plateau) to measured (M, rate)
// pairs by least squares and recovers the lanes and latency it implies:
// W = Plateau·C·L/fmax and Leff = fmax/(Slope·L), with C calls per level, L
// levels per key and fmax the clock (for an engine without one, any unit of
// "cycles" per second: W and Leff come out in it).
//
// It tries every split of the points sorted by M into a linear part and a
// plateau (closed-form least squares for each), keeps the split whose
// min(·,·) curve has the least squared error, and needs at least one point
// on each side.
func FitLaw(points []RatePoint, c float64, l int, fmaxHz float64) (Fit, error) {
	switch {
	case !(c > 0) || l < 1 || !(fmaxHz > 0) || math.IsInf(c, 0) || math.IsInf(fmaxHz, 0):
		return Fit{}, fmt.Errorf("fabric: FitLaw with C = %v, L = %d, fmax = %v", c, l, fmaxHz)
	case len(points) < 2:
		return Fit{}, fmt.Errorf("%w: %d points, want at least 2", ErrFit, len(points))
	}
	ps := append([]RatePoint(nil), points...)
	for _, p := range ps {
		if !(p.M > 0) || !(p.Rate > 0) || math.IsInf(p.M, 0) || math.IsInf(p.Rate, 0) {
			return Fit{}, fmt.Errorf("fabric: point (M = %v, rate = %v), want both positive and finite", p.M, p.Rate)
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].M < ps[j].M })

	best := Fit{RMS: math.Inf(1)}
	found := false
	for k := 1; k < len(ps); k++ {
		if ps[k].M == ps[k-1].M {
			continue // a split must separate distinct M
		}
		var mr, mm, sum float64
		for _, p := range ps[:k] {
			mr += p.M * p.Rate
			mm += p.M * p.M
		}
		for _, p := range ps[k:] {
			sum += p.Rate
		}
		s, pl := mr/mm, sum/float64(len(ps)-k)
		var sse float64
		for _, p := range ps {
			d := math.Min(s*p.M, pl) - p.Rate
			sse += d * d
		}
		rms := math.Sqrt(sse / float64(len(ps)))
		if rms < best.RMS {
			best = Fit{Slope: s, Plateau: pl, RMS: rms}
			found = true
		}
	}
	if !found {
		return Fit{}, fmt.Errorf("%w: all points share one M", ErrFit)
	}
	best.Knee = best.Plateau / best.Slope
	best.Model = Model{
		W:    best.Plateau * c * float64(l) / fmaxHz,
		Leff: fmaxHz / (best.Slope * float64(l)),
		C:    c,
		L:    l,
	}
	return best, nil
}
