package main

import (
	"encoding/json"
	"github.com/kord-fss/kord/infer"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// inferDemoJSON runs `kord infer demo` with the MLP on two images on the
// 1gbps link and checks what every run must show: every output
// bit-exact, the fields present, both key supplies measured (the
// dealer's positive). No wall-clock thresholds.
func inferDemoJSON(t *testing.T, extra ...string) map[string]any {
	t.Helper()
	out, errOut, code := runKord(t, append([]string{"infer", "demo", "--model", "mlp", "--file", "../../infer/testdata/mlp.kordnn",
		"--images", "2", "--link", "1gbps", "--json"}, extra...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, f := range []string{"model", "images", "link", "bit_exact", "mismatches", "accuracy", "online_ms_per_image",
		"online_bytes_per_party_per_image", "online_rounds", "offline_items_per_image", "offline_bytes_per_party_per_image",
		"offline_inter_site_bytes_per_image", "key_supply_ms_per_image", "key_supply_share",
		"dealer_key_supply_ms_per_image", "dealer_key_supply_share", "key_supply_path"} {
		if _, ok := r[f]; !ok {
			t.Fatalf("output lacks %q: %s", f, out)
		}
	}
	if r["model"] != "mlp" || r["link"] != "1gbps" || r["images"] != 2.0 || r["bit_exact"] != 2.0 || r["mismatches"] != 0.0 {
		t.Fatalf("run: %s", out)
	}
	for _, f := range []string{"dealer_key_supply_ms_per_image", "dealer_key_supply_share", "dealer_bytes_per_party_per_image",
		"key_supply_ms_per_image", "key_supply_share", "online_ms_per_image", "offline_items_per_image"} {
		if v, _ := r[f].(float64); v <= 0 {
			t.Errorf("%s = %v, want > 0", f, r[f])
		}
	}
	return r
}

// TestInferDemoLinkJSON: the default run is the five-process path (two
// modules, two party daemons, two online parties and the dealer as
// processes): at most one byte between the sites per key or correlation,
// batch headers included. --out writes party 1's answer for each image
// from --start.
func TestInferDemoLinkJSON(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.jsonl")
	r := inferDemoJSON(t, "--start", "7", "--out", out)
	checkInferOut(t, out, 7, 2, mlpRef(t))
	items, _ := r["offline_items_per_image"].(float64)
	if b, _ := r["offline_inter_site_bytes_per_image"].(float64); b > items {
		t.Errorf("%v bytes between the sites per image for %v keys and correlations: over one byte each", b, items)
	}
	if p, _ := r["key_supply_path"].(string); !strings.Contains(p, "five processes") || !strings.Contains(p, "party daemon") {
		t.Errorf("key_supply_path must name the five-process path: %q", p)
	}
	// the default prefetch: an overlapped pass of both images, checked too
	if w, _ := r["prefetch_window_images"].(float64); w < 2 {
		t.Errorf("prefetch_window_images = %v, want ≥ 2 by default", r["prefetch_window_images"])
	}
	if v, ok := r["online_key_wait_ms_per_image"].(float64); !ok || v < 0 {
		t.Errorf("online_key_wait_ms_per_image = %v, want a time", r["online_key_wait_ms_per_image"])
	}
	if v, _ := r["overlap_online_ms_per_image"].(float64); v <= 0 {
		t.Errorf("overlap_online_ms_per_image = %v, want > 0", r["overlap_online_ms_per_image"])
	}
}

// TestInferDemoNoPrefetch: --prefetch-bytes 0 leaves out the overlapped
// pass (no window, no wait); a negative bound is bad input.
func TestInferDemoNoPrefetch(t *testing.T) {
	r := inferDemoJSON(t, "--prefetch-bytes", "0")
	if r["prefetch_window_images"] != 0.0 || r["online_key_wait_ms_per_image"] != 0.0 || r["overlap_online_ms_per_image"] != 0.0 {
		t.Errorf("--prefetch-bytes 0: window %v, wait %v; want no overlapped pass", r["prefetch_window_images"], r["online_key_wait_ms_per_image"])
	}
	if _, errOut, code := runKord(t, "infer", "demo", "--model", "mlp", "--images", "1", "--prefetch-bytes", "-1"); code != 2 || !strings.Contains(errOut, "--prefetch-bytes") {
		t.Errorf("--prefetch-bytes -1: exit %d, %s; want 2 naming the flag", code, errOut)
	}
}

// TestInferDemoInProcessJSON: --in-process keeps the single-process run
// (an in-process module pair: nothing between the module sites).
func TestInferDemoInProcessJSON(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.jsonl")
	r := inferDemoJSON(t, "--in-process", "--start", "3", "--out", out)
	checkInferOut(t, out, 3, 2, mlpRef(t))
	if _, errOut, code := runKord(t, "infer", "demo", "--model", "mlp", "--images", "1", "--out", out); code != 2 || !strings.Contains(errOut, "already exists") {
		t.Errorf("--out over an existing file: exit %d, %q", code, errOut)
	}
	if r["offline_inter_site_bytes_per_image"] != 0.0 {
		t.Errorf("inter-site bytes %v, want 0", r["offline_inter_site_bytes_per_image"])
	}
	if p, _ := r["key_supply_path"].(string); !strings.Contains(p, "in process") {
		t.Errorf("key_supply_path must say the module pair is in process: %q", p)
	}
}

// TestInferDemoBadLink: an unknown --link is bad input (exit 2), naming
// the presets.
func TestInferDemoBadLink(t *testing.T) {
	_, errOut, code := runKord(t, "infer", "demo", "--model", "mlp", "--images", "1", "--link", "dialup")
	if code != 2 || !strings.Contains(errOut, "1gbps") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// TestInferDemoBadModelFile: a model file that does not parse is refused
// before any process starts, naming the file; so is a party process
// given one.
func TestInferDemoBadModelFile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.kordnn")
	if err := os.WriteFile(bad, []byte("NOTAMODEL"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runKord(t, "infer", "demo", "--model", "cnn", "--file", bad, "--images", "1", "--json")
	if code == 0 || !strings.Contains(errOut, bad) || !strings.Contains(errOut, "model file") {
		t.Fatalf("demo: exit %d: %s", code, errOut)
	}
	out, _, code := runKord(t, "infer", "party", "--party", "1", "--model", "cnn", "--file", bad, "--app", "127.0.0.1:1")
	if code == 0 || !strings.Contains(out, `"error"`) || !strings.Contains(out, "model file") {
		t.Fatalf("party: exit %d: %s", code, out)
	}
}

// checkInferOut reads `kord infer demo --out` and checks one line per
// image from start, in order: the index, the class the logits give, and
// logits equal to the cleartext model's (ref) for that image.
func checkInferOut(t *testing.T, path string, start, images int, ref func(index int) []int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != images {
		t.Fatalf("--out has %d lines, want %d:\n%s", len(lines), images, data)
	}
	for i, l := range lines {
		var o inferOutput
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, l)
		}
		want := ref(start + i)
		if o.Index != start+i || !slices.Equal(o.Logits, want) || o.Class != infer.Argmax(want) {
			t.Fatalf("line %d: %s; want index %d, class %d, logits %v", i, l, start+i, infer.Argmax(want), want)
		}
	}
}

// mlpRef is the cleartext MLP's logits for MNIST test image i.
func mlpRef(t *testing.T) func(int) []int64 {
	m, err := infer.Load("../../infer/testdata/mlp.kordnn")
	if err != nil {
		t.Fatal(err)
	}
	_, test, err := infer.LoadMNIST()
	if err != nil {
		t.Fatal(err)
	}
	return func(i int) []int64 {
		want, _, err := m.Ref(infer.QuantizeImage(test.Images[i], m.Frac))
		if err != nil {
			t.Fatal(err)
		}
		return want
	}
}
