package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kord-fss/kord/internal/daemon"
)

// CLI tests for blocks, pir, bench pir, bench doram, selftest and fabric:
// help, bad input (exit 2, one line naming the problem) and the documented
// JSON fields, with numbers checked against what each run must produce.

func TestReviewHelp(t *testing.T) {
	for _, c := range [][]string{
		{"blocks"}, {"blocks", "table"}, {"pir"}, {"pir", "serve"}, {"pir", "query"}, {"pir", "mkdb"}, {"pir", "info"},
		{"bench", "pir"}, {"bench", "doram"}, {"selftest"}, {"fabric"}, {"fabric", "sweep"}, {"fabric", "simulate"},
	} {
		out, errOut, code := runKord(t, append(c, "--help")...)
		if code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("kord %v --help: exit %d, stdout %.80q, stderr %q", c, code, out, errOut)
		}
	}
}

func TestReviewBadInput(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, bytes.Repeat([]byte{7}, 200), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string // must appear in the one-line message
	}{
		{[]string{"blocks", "bogus"}, `"bogus"`},
		{[]string{"blocks", "table", "--bits", "0"}, "--bits"},
		{[]string{"blocks", "table", "--bits", "8,x"}, "--bits"},
		{[]string{"blocks", "table", "--bits", "65"}, "--bits"},
		{[]string{"blocks", "table", "--ops", "0"}, "--ops"},
		{[]string{"blocks", "table", "extra"}, "extra"},
		{[]string{"pir", "bogus"}, `"bogus"`},
		{[]string{"pir", "mkdb"}, "--out"},
		{[]string{"pir", "mkdb", "--out", filepath.Join(dir, "x.db"), "--records", "0"}, "--records"},
		{[]string{"pir", "mkdb", "--out", filepath.Join(dir, "x.db"), "--record-size", "15"}, "--record-size"},
		{[]string{"pir", "info"}, "arg"},
		{[]string{"pir", "info", filepath.Join(dir, "missing.db")}, "missing.db"},
		{[]string{"pir", "info", junk}, "header"},
		{[]string{"pir", "serve"}, "--db"},
		{[]string{"pir", "serve", "--db", junk}, "--db"},
		{[]string{"pir", "serve", "--db", filepath.Join(dir, "missing.db")}, "missing.db"},
		{[]string{"pir", "serve", "--db", junk, "--workers", "-1"}, "--workers"},
		{[]string{"pir", "query", "--servers", "a"}, "--servers"},
		{[]string{"pir", "query", "--servers", "a,b"}, "--index"},
		{[]string{"pir", "query", "--servers", "a,b", "--index", "1", "--expect-hash", "xyz"}, "--expect-hash"},
		{[]string{"pir", "query", "--servers", "a,b", "--index", "1", "--timeout", "0s"}, "--timeout"},
		{[]string{"bench", "pir", "--records", "0"}, "--records"},
		{[]string{"bench", "pir", "--record-size", "5000"}, "--record-size"},
		{[]string{"bench", "pir", "--batch", "0"}, "--batch"},
		{[]string{"bench", "pir", "--min-time", "-1s"}, "--min-time"},
		{[]string{"bench", "doram", "--bits", "25"}, "--bits"},
		{[]string{"bench", "doram", "--source", "oracle"}, "--source"},
		{[]string{"bench", "doram", "--stash", "-1"}, "--stash"},
		{[]string{"bench", "doram", "--min-time", "-1s"}, "--min-time"},
		{[]string{"selftest", "--tries", "0"}, "--tries"},
		{[]string{"selftest", "--seed", "x"}, "--seed"},
		{[]string{"fabric", "bogus"}, `"bogus"`},
		{[]string{"fabric", "sweep", "--keys", "0"}, "--keys"},
		{[]string{"fabric", "sweep", "--png", "out.jpg"}, "--png"},
		{[]string{"fabric", "simulate", "--W", "0"}, "W = 0"},
		{[]string{"fabric", "simulate", "--mode", "both"}, "--mode"},
		{[]string{"fabric", "simulate", "--mode", "mixed", "--dcf-fraction", "1.5"}, "--dcf-fraction"},
		{[]string{"fabric", "simulate", "--fmax", "0"}, "--fmax"},
	} {
		out, errOut, code := runKord(t, c.args...)
		lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("kord %v: exit %d, stdout %.60q, stderr %q; want exit 2 and one line naming %s", c.args, code, out, errOut, c.want)
		}
	}
}

// TestReviewBlocksTableJSON runs the table at ℓ = 4 on module keys and
// checks the documented fields, that every row is verified, and byte counts
// worked out by hand from the wire formats. Each block runs on all inputs:
// EQ (two inputs) opens 256 4-bit values in one 128-byte frame plus its
// 4-byte header (132/256 B per op) on derived keys (0 B offline); ReLU and
// PriLUT open 16 values in 8+4 bytes (0.75 B per op) and bind one DCF 4→4
// (1+1 bytes) and 16 DPF 4→4 (32 bytes) per op.
func TestReviewBlocksTableJSON(t *testing.T) {
	out, errOut, code := runKord(t, "blocks", "table", "--bits", "4", "--ops", "8", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	want := map[string][3]float64{ // offline B, online B, rounds per op
		"EQ": {0, 132.0 / 256, 1}, "ReLU": {2, 0.75, 1}, "PriLUT": {32, 0.75, 1},
	}
	seen := map[string]bool{}
	for _, r := range rows {
		for _, f := range []string{"block", "in_bits", "offline_wire_bytes_per_party", "online_bytes_per_party", "online_rounds", "keys", "verified"} {
			if _, ok := r[f]; !ok {
				t.Fatalf("row %v lacks %q", r["block"], f)
			}
		}
		b, _ := r["block"].(string)
		seen[b] = true
		if r["verified"] != true || r["in_bits"] != 4.0 || len(r["keys"].([]any)) == 0 {
			t.Errorf("%s: %v", b, r)
		}
		if w, ok := want[b]; ok {
			got := [3]float64{r["offline_wire_bytes_per_party"].(float64), r["online_bytes_per_party"].(float64), r["online_rounds"].(float64)}
			if got != w {
				t.Errorf("%s: offline, online, rounds = %v, want %v", b, got, w)
			}
		}
	}
	for _, b := range []string{"EQ", "CMP", "Mod", "TR", "Ctn", "DigDec", "PubLUT", "PriLUT", "Approx", "ReLU", "DReLU"} {
		if !seen[b] {
			t.Errorf("block %s missing", b)
		}
	}
}

// TestReviewPIREndToEnd writes a database, serves it twice, and retrieves
// records through `kord pir query`, comparing them with the file's bytes.
func TestReviewPIREndToEnd(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "db")
	out, errOut, code := runKord(t, "pir", "mkdb", "--out", db, "--records", "100", "--record-size", "24", "--seed", "7")
	if code != 0 {
		t.Fatalf("mkdb: exit %d: %s", code, errOut)
	}
	hash := strings.TrimSpace(out)
	out, errOut, code = runKord(t, "pir", "info", db)
	var info map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &info) != nil {
		t.Fatalf("info: exit %d: %s %s", code, out, errOut)
	}
	if info["hash"] != hash || info["count"] != 100.0 || info["record_size"] != 24.0 || info["domain_bits"] != 7.0 {
		t.Fatalf("info %v, mkdb printed %s", info, hash)
	}
	raw, err := os.ReadFile(db)
	if err != nil || len(raw) != 64+100*24 {
		t.Fatalf("database file: %d bytes, %v", len(raw), err)
	}
	var addrs []string
	for s := 0; s < 2; s++ {
		cmd := exec.Command(kordBin, "pir", "serve", "--db", db, "--listen", "127.0.0.1:0", "--workers", "1")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		line := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			sc.Scan()
			line <- sc.Text()
		}()
		select {
		case l := <-line:
			kv, err := daemon.ParseReady(l)
			if err != nil || kv["addr"] == "" {
				t.Fatalf("server %d printed %q: %v", s, l, err)
			}
			addrs = append(addrs, kv["addr"])
		case <-time.After(10 * time.Second):
			t.Fatalf("server %d did not start", s)
		}
	}
	servers := strings.Join(addrs, ",")
	idx := []int{0, 57, 99}
	out, errOut, code = runKord(t, "pir", "query", "--servers", servers, "--index", "0,57", "--index", "99", "--expect-hash", hash)
	if code != 0 {
		t.Fatalf("query: exit %d: %s", code, errOut)
	}
	got := strings.Fields(out)
	if len(got) != len(idx) {
		t.Fatalf("query printed %d records: %q", len(got), out)
	}
	for j, i := range idx {
		if want := hex.EncodeToString(raw[64+24*i : 64+24*(i+1)]); got[j] != want {
			t.Errorf("record %d: %s, file holds %s", i, got[j], want)
		}
	}
	other := strings.Repeat("ab", 32)
	if _, errOut, code := runKord(t, "pir", "query", "--servers", servers, "--index", "1", "--expect-hash", other); code != 1 || !strings.Contains(errOut, "hash") {
		t.Errorf("query with another hash: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runKord(t, "pir", "query", "--servers", servers, "--index", "100"); code != 2 || !strings.Contains(errOut, "--index 100") {
		t.Errorf("query past the end: exit %d: %s", code, errOut)
	}
}

func TestReviewBenchPIRJSON(t *testing.T) {
	out, errOut, code := runKord(t, "bench", "pir", "--records", "300", "--record-size", "16", "--batch", "4", "--min-time", "0s", "--workers", "1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"queries_per_sec", "db_bytes_per_sec", "mem_bandwidth_bytes_per_sec"} {
		if v, ok := r[f].(float64); !ok || !(v > 0) {
			t.Errorf("%s = %v", f, r[f])
		}
	}
	if r["answers_verified"] != r["queries"] || r["queries"] != 12.0 || r["answers_wrong"] != 0.0 {
		t.Errorf("3 batches of 4: verified %v of %v, wrong %v", r["answers_verified"], r["queries"], r["answers_wrong"])
	}
	if q, d := r["queries_per_sec"].(float64), r["db_bytes_per_sec"].(float64); d != q*300*16 {
		t.Errorf("db_bytes_per_sec %v is not queries_per_sec × 4800 (%v)", d, q*4800)
	}
}

func TestReviewBenchDORAMJSON(t *testing.T) {
	out, errOut, code := runKord(t, "bench", "doram", "--bits", "5", "--stash", "3", "--source", "module", "--min-time", "10ms", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rs []map[string]any
	if err := json.Unmarshal([]byte(out), &rs); err != nil || len(rs) != 1 {
		t.Fatalf("%v: %s", err, out)
	}
	r := rs[0]
	if r["source"] != "module" || r["d"] != 5.0 || r["stash"] != 3.0 || r["keys_per_access"] != 4.0 {
		t.Errorf("%v", r)
	}
	for _, f := range []string{"keys_supplied_per_sec", "keys_consumed_per_sec", "accesses_per_sec", "supply_over_consumption"} {
		if v, ok := r[f].(float64); !ok || !(v > 0) {
			t.Errorf("%s = %v", f, r[f])
		}
	}
}

func TestReviewSelftestJSON(t *testing.T) {
	out, errOut, code := runKord(t, "selftest", "--json", "--tries", "4", "--seed", "9")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		KAT struct {
			Passed, Failed int
		} `json:"kat"`
		Attacks map[string]map[string]int `json:"attacks"`
		Honest  *bool                     `json:"honest_after_attacks"`
		Seed    uint64                    `json:"seed"`
		Oracle  []struct {
			Tier, Policy     string
			Alphas, Outcomes int
			MaxPerAlpha      int `json:"max_outcomes_per_alpha"`
			Recovered        int
		} `json:"alpha_oracle"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.KAT.Failed != 0 || r.KAT.Passed < 100 || r.Honest == nil || !*r.Honest || r.Seed != 9 {
		t.Fatalf("%s", out)
	}
	if len(r.Oracle) != 3 {
		t.Fatalf("alpha_oracle has %d runs, want 3: %s", len(r.Oracle), out)
	}
	for _, o := range r.Oracle {
		switch {
		case o.Policy == "reuse" && o.Recovered != o.Alphas:
			t.Errorf("control run did not recover α: %+v", o)
		case o.Policy == "burn" && (o.MaxPerAlpha > 1 || o.Recovered != 0):
			t.Errorf("%s tier under kord's rule leaked: %+v", o.Tier, o)
		case o.Tier == "batchmac" && o.Outcomes != 0:
			t.Errorf("authenticated tier gave outcomes: %+v", o)
		}
	}
	classes := []string{"tampered_tag", "tampered_ciphertext", "wrong_channel_key", "replay", "reflection",
		"cross_substitution", "reordering", "truncation", "extension"}
	var names []string
	for c, a := range r.Attacks {
		names = append(names, c)
		if a["tried"] != 4 || a["accepted"] != 0 || a["counter_moved"] != 0 || a["dispatched"] != 0 {
			t.Errorf("%s: %v", c, a)
		}
	}
	slices.Sort(names)
	slices.Sort(classes)
	if !slices.Equal(names, classes) {
		t.Errorf("attack classes %v, want %v", names, classes)
	}
}

func TestReviewFabricSweepJSON(t *testing.T) {
	out, errOut, code := runKord(t, "fabric", "sweep", "--json", "--keys", "24")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Utilization []map[string]any   `json:"utilization"`
		Rates       map[string]float64 `json:"rates"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Utilization) != 4*8 {
		t.Errorf("%d utilization points, want 4 series × 8 M", len(r.Utilization))
	}
	for _, p := range r.Utilization {
		for _, f := range []string{"mode", "W", "M", "sim", "model"} {
			if _, ok := p[f]; !ok {
				t.Fatalf("point %v lacks %q", p, f)
			}
		}
		if s := p["sim"].(float64); !(s > 0 && s <= 1) {
			t.Errorf("utilization %v", p)
		}
	}
	// The model's saturated rate is fmax·W/(C·ℓ); KORD's figures to 1%.
	for name, pub := range map[string]float64{
		"dpf_only_w8_204mhz_dpf32": 12.75e6, "unified_w8_154_6mhz_dpf32": 4.83e6,
		"unified_w8_154_6mhz_dcf32": 4.83e6, "dpf_only_w8_204mhz_dpf20": 20.40e6,
	} {
		v, ok := r.Rates[name]
		if !ok || v < 0.99*pub || v > 1.01*pub {
			t.Errorf("rates[%s] = %v, want ≈ %v", name, v, pub)
		}
	}
	if len(r.Rates) != 4 {
		t.Errorf("rates has %d entries: %v", len(r.Rates), r.Rates)
	}
}
