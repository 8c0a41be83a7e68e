package main

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kord-fss/kord/cmd/kord/internal/inferdemo"
	"github.com/kord-fss/kord/infer"
)

// TestInferResNetInventory: `kord infer inventory --model resnet18 --json`
// gives the ImageNet ResNet-18's key counts by kind, adding up to the
// total, set against KORD's trees.
func TestInferResNetInventory(t *testing.T) {
	out, errOut, code := runKord(t, "infer", "inventory", "--model", "resnet18", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Keys      map[string]int `json:"keys"`
		KeyTotal  int            `json:"key_total"`
		KORDTrees int            `json:"kord_trees"`
		Layers    []struct {
			KeyTotal int `json:"key_total"`
		} `json:"layers"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	sum, lsum := 0, 0
	for _, v := range r.Keys {
		sum += v
	}
	for _, l := range r.Layers {
		lsum += l.KeyTotal
	}
	if sum != r.KeyTotal || lsum != r.KeyTotal || r.KORDTrees != 6726608 || r.Keys["dcf-32→32"] == 0 {
		t.Fatalf("kinds add to %d, layers to %d, total %d, KORD %d: %s", sum, lsum, r.KeyTotal, r.KORDTrees, out[:min(len(out), 300)])
	}
}

// TestInferResNetDemo: the reduced ResNet-18 through `kord infer demo`,
// overlapped, its keys and correlations from the two party daemons the
// command starts (the default path), the online link and the sites' peer
// link shaped as lan: bit-exact, the MNIST demo's fields present, keys
// counted, the bytes between the sites counted by the proxy, every
// process's peak RSS read.
func TestInferResNetDemo(t *testing.T) {
	out, errOut, code := runKord(t, "infer", "demo", "--model", "resnet18-s32-w4-c10", "--images", "1", "--overlap", "--chunk", "4096",
		"--link", "lan", "--quiet", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	r := resnetDemoFields(t, out)
	if r["overlap"] != true || r["link"] != "lan" || !strings.HasPrefix(r["key_supply_path"].(string), "party daemons") {
		t.Fatalf("run: %s", out)
	}
	if v, _ := r["offline_inter_site_bytes_per_image"].(float64); v <= 0 {
		t.Fatalf("no bytes counted between the sites: %s", out)
	}
	rss, _ := r["peak_rss_bytes_by_process"].(map[string]any)
	for _, p := range []string{"client", "party0", "party1", "module0", "module1"} {
		if v, _ := rss[p].(float64); v <= 0 {
			t.Fatalf("no peak RSS for %s: %s", p, out)
		}
	}
}

// TestInferResNetDemoInProcess: --in-process keeps the single-process
// path (a module pair in this process), here with --compare-overlap.
func TestInferResNetDemoInProcess(t *testing.T) {
	outFile := filepath.Join(t.TempDir(), "out.jsonl")
	out, errOut, code := runKord(t, "infer", "demo", "--model", "resnet18-s32-w4-c10", "--images", "1", "--in-process",
		"--compare-overlap", "--no-dealer", "--chunk", "4096", "--quiet", "--json", "--start", "2", "--out", outFile)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	r := resnetDemoFields(t, out)
	if !strings.HasPrefix(r["key_supply_path"].(string), "in process") || r["offline_inter_site_bytes_per_image"] != 0.0 {
		t.Fatalf("run: %s", out)
	}
	if v, _ := r["overlap_wall_ms_per_image"].(float64); v <= 0 {
		t.Fatalf("no overlapped run: %s", out)
	}
	// --start 2 runs the seeded image 2; --out has its answer.
	m, err := infer.ResNetModel("resnet18-s32-w4-c10")
	if err != nil {
		t.Fatal(err)
	}
	checkInferOut(t, outFile, 2, 1, func(i int) []int64 {
		want, _, err := m.Ref(infer.ResNetImage(m, infer.ResNetSeed+uint64(i)))
		if err != nil {
			t.Fatal(err)
		}
		return want
	})
}

// resnetDemoFields checks a ResNet demo's JSON: every field of the MNIST
// demo's report (inferdemo.DemoReport) is there, the image is bit-exact and
// material was counted.
func resnetDemoFields(t *testing.T, out string) map[string]any {
	t.Helper()
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// every field of the MNIST demo's report, and the streamed run's own
	fields := []string{"peak_rss_bytes", "peak_rss_bytes_by_process", "max_step_material_bytes_per_party", "keys", "steps", "chunk"}
	rt := reflect.TypeOf(inferdemo.DemoReport{})
	for i := 0; i < rt.NumField(); i++ {
		if name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			fields = append(fields, name)
		}
	}
	for _, f := range fields {
		if _, ok := r[f]; !ok {
			t.Fatalf("output lacks %q: %s", f, out)
		}
	}
	if r["bit_exact"] != 1.0 || r["mismatches"] != 0.0 {
		t.Fatalf("run: %s", out)
	}
	if v, _ := r["offline_items_per_image"].(float64); v <= 0 {
		t.Fatalf("no material counted: %s", out)
	}
	return r
}

// TestInferResNetBadModel: a malformed ResNet name, an unknown link and
// --dealer are bad input (exit 2), each named.
func TestInferResNetBadModel(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"infer", "inventory", "--model", "resnet18-x9"}, "resnet18"},
		{[]string{"infer", "demo", "--model", "resnet18-x9"}, "resnet18"},
		{[]string{"infer", "demo", "--model", "resnet18", "--link", "moon"}, "--link"},
		{[]string{"infer", "demo", "--model", "resnet18", "--dealer"}, "--dealer"},
		{[]string{"infer", "demo", "--model", "resnet18", "--images", "0"}, "--images"},
	} {
		_, errOut, code := runKord(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d: %s", c.args, code, errOut)
		}
	}
}
