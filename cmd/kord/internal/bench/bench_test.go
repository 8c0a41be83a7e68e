package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kord-fss/kord/fss"
)

func params(t *testing.T, typ fss.Type, in, out int) fss.Params {
	t.Helper()
	return fss.Params{Type: typ, InBits: in, OutBits: out}
}

// TestRun measures each operation on a tiny workload and checks the
// report's consistency (not the speed): blocks per key, the per-worker
// rate, the ratio against the kernel, and the JSON field names kord bench
// prints.
func TestRun(t *testing.T) {
	for _, c := range []struct {
		op         string
		p          fss.Params
		keys       int
		blocksPerK float64
	}{
		{OpGen, params(t, fss.DPF, 16, 16), 300, 4 * 16},
		{OpGen, params(t, fss.DCF, 16, 16), 300, 8 * 16},
		{OpEval, params(t, fss.DCF, 16, 16), 300, 2 * 16},
		{OpEvalAll, params(t, fss.DPF, 10, 16), 3, 2 * 1023},
	} {
		r, err := Run(Config{Op: c.op, Params: c.p, Keys: c.keys, Workers: 2, KernelTime: 10 * time.Millisecond})
		if err != nil {
			t.Fatalf("%s %v: %v", c.op, c.p, err)
		}
		if r.BlocksPerKey != c.blocksPerK || r.Workers != 2 || r.Keys != c.keys || r.Op != c.op {
			t.Errorf("%s %v: %+v", c.op, c.p, r)
		}
		if r.KeysPerSec <= 0 || r.KernelBlocksPerSec <= 0 || r.KeysPerSecPerWorker != r.KeysPerSec/2 {
			t.Errorf("%s %v: inconsistent rates %+v", c.op, c.p, r)
		}
		if want := r.KeysPerSec * c.blocksPerK / r.KernelBlocksPerSec; math.Abs(r.Ratio-want) > 1e-9*want {
			t.Errorf("%s %v: ratio %v, want %v", c.op, c.p, r.Ratio, want)
		}
		if r.KernelBlocksPerSec != (r.KernelBefore+r.KernelAfter)/2 {
			t.Errorf("%s: kernel %v is not the mean of %v and %v", c.op, r.KernelBlocksPerSec, r.KernelBefore, r.KernelAfter)
		}
		js, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"op", "type", "in_bits", "out_bits", "keys", "workers", "kernel", "seconds",
			"keys_per_sec", "keys_per_sec_per_worker", "kernel_blocks_per_sec", "blocks_per_key", "ratio"} {
			if !bytes.Contains(js, []byte(`"`+f+`":`)) {
				t.Errorf("%s: no %q in %s", c.op, f, js)
			}
		}
		var text strings.Builder
		r.WriteText(&text)
		if !strings.HasPrefix(text.String(), "bench "+c.op+" "+c.p.String()+":") {
			t.Errorf("%s: text report %q", c.op, text.String())
		}
	}
}

// TestRunRefuses checks Run's own checks of its configuration.
func TestRunRefuses(t *testing.T) {
	p := params(t, fss.DPF, 16, 16)
	for _, c := range []Config{
		{Op: "keygen", Params: p, Keys: 1, KernelTime: time.Millisecond},
		{Op: OpGen, Params: p, Keys: 0, KernelTime: time.Millisecond},
		{Op: OpGen, Params: p, Keys: 1, Workers: -1, KernelTime: time.Millisecond},
		{Op: OpGen, Params: p, Keys: 1},
		{Op: OpEvalAll, Params: params(t, fss.DPF, MaxEvalAllBits+1, 16), Keys: 1, KernelTime: time.Millisecond},
	} {
		if _, err := Run(c); err == nil {
			t.Errorf("accepted %+v", c)
		}
	}
}

// TestInflight runs a tiny sweep: every M is measured, the fit is
// positive and consistent (knee = W·Leff/C), and the PNG is written.
func TestInflight(t *testing.T) {
	png := filepath.Join(t.TempDir(), "f.png")
	r, err := Inflight(InflightConfig{Params: params(t, fss.DPF, 8, 8), Rounds: 1, MinTime: time.Millisecond,
		KeysPerWorker: []int{8, 1, 4, 4}, PNG: png})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Points) != 3 || r.Points[0].M != 1 || r.Points[2].M != 8 || r.C != 4 || r.L != 8 {
		t.Fatalf("points %+v, C %d, L %d", r.Points, r.C, r.L)
	}
	if !(r.W > 0 && r.Leff > 0) || math.Abs(r.Knee-r.W*r.Leff/float64(r.C)) > 1e-9*r.Knee {
		t.Fatalf("fit W %v Leff %v knee %v", r.W, r.Leff, r.Knee)
	}
	for _, pt := range r.Points {
		if len(pt.Runs) != 1 || pt.Median != pt.KeysPerSec || pt.Law != math.Min(r.Slope*float64(pt.M), r.Plateau) {
			t.Errorf("point %+v", pt)
		}
	}
	var text strings.Builder
	r.WriteText(&text)
	if !strings.Contains(text.String(), "fit: W = ") {
		t.Errorf("text report %q", text.String())
	}
	for _, bad := range []InflightConfig{
		{Params: params(t, fss.DPF, 8, 8), Rounds: 0, MinTime: time.Millisecond},
		{Params: params(t, fss.DPF, 8, 8), Rounds: 1},
		{Params: params(t, fss.DPF, 8, 8), Rounds: 1, MinTime: time.Millisecond, KeysPerWorker: []int{4}},
	} {
		if _, err := Inflight(bad); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}

func TestSweepM(t *testing.T) {
	if ms, err := SweepM(nil); err != nil || len(ms) != len(InflightM) {
		t.Errorf("default: %v %v", ms, err)
	}
	if ms, err := SweepM([]int{8, 2, 8}); err != nil || len(ms) != 2 || ms[0] != 2 || ms[1] != 8 {
		t.Errorf("8,2,8: %v %v", ms, err)
	}
	for _, bad := range [][]int{{4}, {4, 4}, {0, 4}, {1, MaxKeysPerWorker + 1}} {
		if _, err := SweepM(bad); err == nil {
			t.Errorf("accepted %v", bad)
		}
	}
}

func TestMedian(t *testing.T) {
	xs := []float64{3, 1, 2}
	if m := Median(xs); m != 2 || xs[0] != 3 {
		t.Errorf("median %v of %v", m, xs)
	}
	if m := Median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("even median %v", m)
	}
	if m := Median(nil); m != 0 {
		t.Errorf("empty median %v", m)
	}
}

// TestGenSweep draws a tiny sweep: one line per worker count and batch
// size, and the PNG.
func TestGenSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("each point runs for at least 100 ms, five times")
	}
	png := filepath.Join(t.TempDir(), "s.png")
	var out bytes.Buffer
	if err := GenSweep(&out, params(t, fss.DPF, 8, 8), 4, 1, png); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 2 { // batches 1 and 4
		t.Errorf("%d lines:\n%s", n, out.String())
	}
}
