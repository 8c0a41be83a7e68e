package fabricrun

import (
	"fmt"
	"io"
	"math"

	"github.com/kord-fss/kord/fabric"
)

// The request streams Simulate takes.
const (
	ModeDPF   = "dpf"
	ModeDCF   = "dcf"
	ModeMixed = "mixed"
)

// Limits of one simulation.
const (
	MaxSimKeys   = 1 << 24
	MaxSimBits   = 1024
	MaxSimLevels = 1 << 27 // keys × bits
)

// SimConfig is one fabric configuration and request stream for Simulate.
type SimConfig struct {
	W, M       int     // AES lanes, key slots
	Latency    int     // AES-MMO pipeline depth (Leff = Latency + Turnaround)
	Turnaround int     // scheduler turnaround cycles
	Bits       int     // levels per key
	Mode       string  // ModeDPF, ModeDCF or ModeMixed
	DCF        float64 // share of DCF keys in a ModeMixed stream, 0..1
	Unified    bool    // issue DPF levels as 8 calls, like DCF
	FmaxMHz    float64 // clock
	Keys       int     // keys in the stream
}

// ConfigError is a SimConfig that Simulate refuses; its message is the
// reason alone.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErr(format string, args ...any) error {
	return &ConfigError{fmt.Errorf(format, args...)}
}

// SimReport is the JSON of kord fabric simulate.
type SimReport struct {
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

// Simulate runs the cycle-level simulator on c and evaluates the model of
// the same configuration and stream beside it. A configuration it refuses
// is a *ConfigError.
func Simulate(c SimConfig) (*SimReport, error) {
	switch {
	case !(c.FmaxMHz > 0) || math.IsInf(c.FmaxMHz, 0):
		return nil, configErr("clock %v MHz: want > 0", c.FmaxMHz)
	case c.Keys < 1 || c.Keys > MaxSimKeys:
		return nil, configErr("%d keys: want 1..%d", c.Keys, MaxSimKeys)
	case c.Bits < 1 || c.Bits > MaxSimBits:
		return nil, configErr("%d bits: want 1..%d", c.Bits, MaxSimBits)
	case int64(c.Keys)*int64(c.Bits) > MaxSimLevels:
		return nil, configErr("%d levels: at most %d per run", int64(c.Keys)*int64(c.Bits), MaxSimLevels)
	}
	var frac float64
	switch c.Mode {
	case ModeDPF:
	case ModeDCF:
		frac = 1
	case ModeMixed:
		if !(c.DCF >= 0 && c.DCF <= 1) {
			return nil, configErr("DCF share %v: want 0..1", c.DCF)
		}
		frac = c.DCF
	default:
		return nil, configErr("mode %q: want %s, %s or %s", c.Mode, ModeDPF, ModeDCF, ModeMixed)
	}
	cfg := fabric.NewConfig(c.W, c.M)
	cfg.Pipeline, cfg.Turnaround, cfg.Levels = c.Latency, c.Turnaround, c.Bits
	if c.Unified {
		cfg.CallsDPF = cfg.CallsDCF
	}
	if err := cfg.Validate(); err != nil {
		return nil, &ConfigError{err}
	}
	stream, err := fabric.MixedStream(c.Keys, frac)
	if err != nil {
		return nil, &ConfigError{err}
	}
	res, err := fabric.Simulate(cfg, stream)
	if err != nil {
		return nil, err
	}
	mod, err := fabric.StreamModel(cfg, stream)
	if err != nil {
		return nil, err
	}
	su, err := mod.StreamUtilization(c.M, c.Keys)
	if err != nil {
		return nil, err
	}
	r := &SimReport{
		W: c.W, M: c.M, Latency: c.Latency, Turnaround: c.Turnaround, Leff: cfg.Leff(), Bits: c.Bits,
		Mode: c.Mode, DCFFraction: frac, Unified: c.Unified, FmaxMHz: c.FmaxMHz, Keys: c.Keys,
		Cycles: res.Cycles, Utilization: res.Utilization, UsefulUtilization: res.UsefulUtilization(),
		KeysPerCycle: res.KeysPerCycle(), KeysPerSecond: res.KeysPerSecond(c.FmaxMHz * 1e6),
	}
	r.Model.Knee = mod.Knee()
	r.Model.Law = mod.Utilization(float64(c.M))
	r.Model.Stream = su
	r.Model.SaturatedRate = mod.SaturatedRate(c.FmaxMHz * 1e6)
	return r, nil
}

// WriteText prints r as kord fabric simulate does without --json.
func (r *SimReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "fabric: W=%d lanes, M=%d slots, pipeline %d + turnaround %d (Leff=%d), ℓ=%d, %s stream of %d keys",
		r.W, r.M, r.Latency, r.Turnaround, r.Leff, r.Bits, r.Mode, r.Keys)
	if r.Mode == ModeMixed {
		fmt.Fprintf(w, " (%.0f%% DCF)", 100*r.DCFFraction)
	}
	if r.Unified {
		fmt.Fprint(w, ", unified (DPF levels issued as 8 calls)")
	}
	fmt.Fprintf(w, "\ncycles       %d\n", r.Cycles)
	fmt.Fprintf(w, "utilization  %.2f%% (useful %.2f%%)\n", 100*r.Utilization, 100*r.UsefulUtilization)
	fmt.Fprintf(w, "keys/s       %.4g at %.1f MHz (%.5f keys/cycle)\n", r.KeysPerSecond, r.FmaxMHz, r.KeysPerCycle)
	fmt.Fprintf(w, "model        knee M* = %.2f, law %.2f%%, over this stream %.2f%%, saturated %.4g keys/s\n",
		r.Model.Knee, 100*r.Model.Law, 100*r.Model.Stream, r.Model.SaturatedRate)
}
