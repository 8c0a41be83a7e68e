package fabricrun

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kord-fss/kord/fabric"
)

// TestSweep runs a short sweep: the knee is the published one, every
// series and M is there, the capacity sets are both there, the report's
// JSON has the fields kord fabric sweep prints, and the PNGs are written.
func TestSweep(t *testing.T) {
	png := filepath.Join(t.TempDir(), "u.png")
	r, err := Sweep(24, png)
	if err != nil {
		t.Fatal(err)
	}
	if r.Knee != fabric.PublishedKnee || r.Levels != fabric.DefaultLevels || r.Keys != 24 {
		t.Errorf("knee %v levels %d keys %d", r.Knee, r.Levels, r.Keys)
	}
	if want := len(fabric.SweepSeries()) * len(fabric.SweepM); len(r.Utilization) != want {
		t.Errorf("%d utilization points, want %d", len(r.Utilization), want)
	}
	if len(r.Capacity) != 10 || r.Capacity[0].M != 16 || r.Capacity[9].M != 6 {
		t.Errorf("capacity %+v", r.Capacity)
	}
	if len(r.Files) != 2 || r.Files[0] != png || !strings.HasSuffix(r.Files[1], "u_capacity.png") {
		t.Errorf("files %v", r.Files)
	}
	for _, f := range r.Files {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"keys", "levels", "knee", "max_deviation", "utilization", "rates", "rates_sim", "rates_published", "capacity", "published", "files"} {
		if _, ok := m[f]; !ok {
			t.Errorf("no %q in %s", f, js)
		}
	}
	var text strings.Builder
	r.WriteText(&text)
	for _, s := range []string{"Utilization over a stream of 24 keys", "Rates (keys/s)", "Mixed streams", "wrote " + png} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("no %q in the text report", s)
		}
	}
	for _, bad := range []struct {
		keys int
		png  string
	}{{0, ""}, {MaxSweepKeys + 1, ""}, {8, "x.jpg"}} {
		if _, err := Sweep(bad.keys, bad.png); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}

func simConfig() SimConfig {
	return SimConfig{W: 4, M: 12, Latency: fabric.DefaultPipeline, Turnaround: fabric.DefaultTurnaround,
		Bits: fabric.DefaultLevels, Mode: ModeDPF, FmaxMHz: 300, Keys: 64}
}

// TestSimulate checks one DPF run against the model and a mixed unified
// one's fraction and text.
func TestSimulate(t *testing.T) {
	r, err := Simulate(simConfig())
	if err != nil {
		t.Fatal(err)
	}
	if r.Leff != fabric.DefaultPipeline+fabric.DefaultTurnaround || r.DCFFraction != 0 || r.Cycles <= 0 {
		t.Errorf("%+v", r)
	}
	if r.Model.Knee != 12 || r.Utilization <= 0 || r.Utilization > 1 || r.KeysPerSecond != r.KeysPerCycle*300e6 {
		t.Errorf("%+v", r)
	}
	c := simConfig()
	c.Mode, c.DCF, c.Unified = ModeMixed, 0.25, true
	r, err = Simulate(c)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	r.WriteText(&text)
	if r.DCFFraction != 0.25 || !strings.Contains(text.String(), "(25% DCF), unified") {
		t.Errorf("fraction %v, text %q", r.DCFFraction, text.String())
	}
	c.Mode = ModeDCF
	if r, err = Simulate(c); err != nil || r.DCFFraction != 1 {
		t.Errorf("dcf: %v %v", r, err)
	}
}

// TestSimulateRefuses: every refused configuration is a *ConfigError.
func TestSimulateRefuses(t *testing.T) {
	for _, edit := range []func(*SimConfig){
		func(c *SimConfig) { c.W = 0 },
		func(c *SimConfig) { c.FmaxMHz = 0 },
		func(c *SimConfig) { c.Keys = 0 },
		func(c *SimConfig) { c.Bits = MaxSimBits + 1 },
		func(c *SimConfig) { c.Keys, c.Bits = MaxSimKeys, 32 },
		func(c *SimConfig) { c.Mode = "both" },
		func(c *SimConfig) { c.Mode, c.DCF = ModeMixed, 1.5 },
	} {
		c := simConfig()
		edit(&c)
		_, err := Simulate(c)
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%+v: %v, want a *ConfigError", c, err)
		}
	}
}
