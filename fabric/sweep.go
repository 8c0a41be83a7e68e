package fabric

import (
	"fmt"
	"math"
)

// KORD's published figures, as fractions, keys/s and Hz.
const (
	PublishedSingleChain     = 0.0831  // utilization of one key in flight
	PublishedKnee            = 12      // M*
	PublishedKneeUtilization = 0.9667  // simulated utilization at M = M*
	PublishedSaturated       = 0.9984  // simulated utilization at M >= 16
	PublishedMaxDeviation    = 0.003   // model vs simulation, in utilization
	PublishedDPFOnlyW8Rate   = 12.75e6 // DPF-32 keys/s, DPF-only W8 engine
	PublishedUnifiedW8Rate   = 4.83e6  // DPF-32 or DCF-32 keys/s, unified W8 engine
	PublishedDPF20Rate       = 20.40e6 // DPF-20 keys/s, DPF-only W8 engine
	FmaxDPFOnlyW8            = 204.0e6 // Hz
	FmaxUnifiedW8            = 154.6e6 // Hz
)

// SweepKeys is the stream length that reproduces KORD's simulated
// utilizations: 256 keys of 32 levels (8192 level issues per run), measured
// from the first admission to the last retirement inclusive. See
// docs/fabric.md for why.
const SweepKeys = 256

// SweepM is the swept range of keys in flight.
var SweepM = []int{1, 2, 4, 8, 12, 16, 24, 32}

// Series is one curve of a sweep: an engine fed one kind of stream.
type Series struct {
	Mode   string  // "dpf", "dcf" or "mixed"
	Engine string  // "dpf-w4", "unified-w8", "dpf-only-w8"
	W      int     // lanes
	DCF    float64 // fraction of DCF keys in the stream
	config func(m int) Config
}

// Config is the series' engine with m slots.
func (s Series) Config(m int) Config { return s.config(m) }

// Stream is the series' request stream of n keys.
func (s Series) Stream(n int) ([]Kind, error) { return MixedStream(n, s.DCF) }

// SweepSeries are the curves of `kord fabric sweep`: the DPF fabric with
// W = 4 and the unified W = 8 engine on DPF, DCF and 50/50 mixed streams.
func SweepSeries() []Series {
	return []Series{
		{Mode: "dpf", Engine: "dpf-w4", W: 4, DCF: 0, config: func(m int) Config { return DPFEngine(4, m) }},
		{Mode: "dpf", Engine: "unified-w8", W: 8, DCF: 0, config: UnifiedW8},
		{Mode: "dcf", Engine: "unified-w8", W: 8, DCF: 1, config: UnifiedW8},
		{Mode: "mixed", Engine: "unified-w8", W: 8, DCF: 0.5, config: UnifiedW8},
	}
}

// StreamModel is the model of cfg over a stream: for a stream of one kind,
// ModelOf; for a mixed one, calls per level and slot period averaged over
// the stream's keys (an approximation where the two kinds differ).
func StreamModel(cfg Config, stream []Kind) (Model, error) {
	var nDCF int
	for _, k := range stream {
		if k == DCF {
			nDCF++
		}
	}
	switch {
	case nDCF == 0:
		return ModelOf(cfg, DPF)
	case nDCF == len(stream):
		return ModelOf(cfg, DCF)
	}
	a, err := ModelOf(cfg, DPF)
	if err != nil {
		return Model{}, err
	}
	b, err := ModelOf(cfg, DCF)
	if err != nil {
		return Model{}, err
	}
	p := float64(nDCF) / float64(len(stream))
	a.C = (1-p)*a.C + p*b.C
	a.Leff = (1-p)*a.Leff + p*b.Leff
	return a, nil
}

// Point is one swept configuration: simulated and modelled utilization.
type Point struct {
	Mode   string
	Engine string
	W, M   int
	Keys   int
	Cycles int64   // simulated
	Sim    float64 // simulated utilization
	Model  float64 // closed-form utilization over the same stream (Model.StreamUtilization)
	Law    float64 // steady-state law min(1, M/M*)
	Knee   float64 // M*
}

// Deviation is |Sim - Model| in utilization (0.003 = 0.3 points).
func (p Point) Deviation() float64 { return math.Abs(p.Sim - p.Model) }

// LawDeviation is |Sim - Law|.
func (p Point) LawDeviation() float64 { return math.Abs(p.Sim - p.Law) }

// Evaluate simulates and models one series at m slots over n keys.
func Evaluate(s Series, m, n int) (Point, error) {
	cfg := s.Config(m)
	stream, err := s.Stream(n)
	if err != nil {
		return Point{}, err
	}
	res, err := Simulate(cfg, stream)
	if err != nil {
		return Point{}, err
	}
	mod, err := StreamModel(cfg, stream)
	if err != nil {
		return Point{}, err
	}
	u, err := mod.StreamUtilization(m, n)
	if err != nil {
		return Point{}, err
	}
	return Point{
		Mode: s.Mode, Engine: s.Engine, W: cfg.W, M: m, Keys: n,
		Cycles: res.Cycles, Sim: res.Utilization, Model: u,
		Law: mod.Utilization(float64(m)), Knee: mod.Knee(),
	}, nil
}

// Sweep evaluates every series at every M over streams of n keys.
func Sweep(ms []int, n int) ([]Point, error) {
	if n < 1 {
		return nil, fmt.Errorf("fabric: sweep over %d keys", n)
	}
	var out []Point
	for _, s := range SweepSeries() {
		for _, m := range ms {
			p, err := Evaluate(s, m, n)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// RateFigure is one published throughput figure reproduced.
type RateFigure struct {
	Name      string // JSON key
	Engine    string
	Kind      Kind
	Levels    int
	FmaxHz    float64
	M         int     // slots used for the simulation (past the knee)
	Keys      int     // stream length of the simulation
	Published float64 // keys/s
	Model     float64 // Model.SaturatedRate: fmax·W/(c·ℓ)
	Sim       float64 // simulated keys/s over the stream
}

// RateKeys is the stream length of the rate simulations: long enough that
// warm-up and drain cost under 0.1%.
const RateKeys = 2048

// PublishedRates reproduces KORD's throughput figures with the model and
// with the simulator (M = 32 slots, RateKeys keys).
func PublishedRates() ([]RateFigure, error) {
	figs := []RateFigure{
		{Name: "dpf_only_w8_204mhz_dpf32", Engine: "dpf-only-w8", Kind: DPF, Levels: 32, FmaxHz: FmaxDPFOnlyW8, Published: PublishedDPFOnlyW8Rate},
		{Name: "unified_w8_154_6mhz_dpf32", Engine: "unified-w8", Kind: DPF, Levels: 32, FmaxHz: FmaxUnifiedW8, Published: PublishedUnifiedW8Rate},
		{Name: "unified_w8_154_6mhz_dcf32", Engine: "unified-w8", Kind: DCF, Levels: 32, FmaxHz: FmaxUnifiedW8, Published: PublishedUnifiedW8Rate},
		{Name: "dpf_only_w8_204mhz_dpf20", Engine: "dpf-only-w8", Kind: DPF, Levels: 20, FmaxHz: FmaxDPFOnlyW8, Published: PublishedDPF20Rate},
	}
	for i := range figs {
		f := &figs[i]
		f.M, f.Keys = 32, RateKeys
		var cfg Config
		if f.Engine == "unified-w8" {
			cfg = UnifiedW8(f.M)
		} else {
			cfg = DPFOnlyW8(f.M)
		}
		cfg.Levels = f.Levels
		mod, err := ModelOf(cfg, f.Kind)
		if err != nil {
			return nil, err
		}
		res, err := Simulate(cfg, UniformStream(f.Kind, f.Keys))
		if err != nil {
			return nil, err
		}
		f.Model = mod.SaturatedRate(f.FmaxHz)
		f.Sim = res.KeysPerSecond(f.FmaxHz)
	}
	return figs, nil
}

// CapacityPoint is one mixed stream on the unified W8 engine at 154.6 MHz.
type CapacityPoint struct {
	DCF      float64 // fraction of DCF keys in the stream
	RateDPF  float64 // DPF keys/s
	RateDCF  float64 // DCF keys/s
	Capacity float64 // model saturated rate, keys/s (the line R_DPF + R_DCF = Capacity)
}

// Load is (R_DPF + R_DCF)/Capacity; KORD's capacity line says Load <= 1.
func (c CapacityPoint) Load() float64 { return (c.RateDPF + c.RateDCF) / c.Capacity }

// MixedCapacity simulates the unified W8 engine with m slots at 154.6 MHz on
// streams of n keys of 32 levels with the given DCF fractions.
func MixedCapacity(fractions []float64, m, n int) ([]CapacityPoint, error) {
	cfg := UnifiedW8(m)
	mod, err := ModelOf(cfg, DCF)
	if err != nil {
		return nil, err
	}
	var out []CapacityPoint
	for _, p := range fractions {
		stream, err := MixedStream(n, p)
		if err != nil {
			return nil, err
		}
		res, err := Simulate(cfg, stream)
		if err != nil {
			return nil, err
		}
		sec := float64(res.Cycles) / FmaxUnifiedW8
		out = append(out, CapacityPoint{
			DCF:      p,
			RateDPF:  float64(res.KeysDPF) / sec,
			RateDCF:  float64(res.KeysDCF) / sec,
			Capacity: mod.SaturatedRate(FmaxUnifiedW8),
		})
	}
	return out, nil
}
