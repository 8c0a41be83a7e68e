package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestInferDemoLinkJSON runs `kord infer demo` on the 1gbps link with the
// MLP on two images: every output bit-exact, the fields present,
// both key supplies measured (the dealer's positive), nothing between the
// module sites. No wall-clock thresholds.
func TestInferDemoLinkJSON(t *testing.T) {
	out, errOut, code := runKord(t, "infer", "demo", "--model", "mlp", "--file", "../../infer/testdata/mlp.kordnn",
		"--images", "2", "--link", "1gbps", "--json")
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
	if r["offline_inter_site_bytes_per_image"] != 0.0 {
		t.Errorf("inter-site bytes %v, want 0", r["offline_inter_site_bytes_per_image"])
	}
	if p, _ := r["key_supply_path"].(string); !strings.Contains(p, "in process") || !strings.Contains(p, "five-process") {
		t.Errorf("key_supply_path must say the module path is in process for now: %q", p)
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
