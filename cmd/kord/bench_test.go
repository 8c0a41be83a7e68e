package main

import (
	"encoding/json"
	"testing"
)

// TestBenchJSON runs each bench subcommand on a tiny workload and checks the
// JSON object's fields and their consistency (not the speed).
func TestBenchJSON(t *testing.T) {
	for _, c := range []struct {
		op, typ    string
		inBits     string
		keys       string
		blocksPerK float64
	}{
		{"gen", "dpf", "16", "300", 4 * 16},
		{"gen", "dcf", "16", "300", 8 * 16},
		{"eval", "dcf", "16", "300", 2 * 16},
		{"evalall", "dpf", "10", "3", 2 * 1023},
	} {
		stdout, stderr, code := runKord(t, "bench", c.op, "--type", c.typ, "--in-bits", c.inBits,
			"--out-bits", "16", "--keys", c.keys, "--workers", "2", "--kernel-time", "20ms", "--json")
		if code != 0 {
			t.Fatalf("bench %s: exit %d: %s", c.op, code, stderr)
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatalf("bench %s: output is not one JSON object: %v\n%s", c.op, err, stdout)
		}
		for _, f := range []string{"keys_per_sec", "keys_per_sec_per_worker", "kernel_blocks_per_sec", "blocks_per_key", "ratio", "workers", "kernel"} {
			if _, ok := r[f]; !ok {
				t.Errorf("bench %s: no %q in %s", c.op, f, stdout)
			}
		}
		if r["blocks_per_key"] != c.blocksPerK || r["workers"] != 2.0 {
			t.Errorf("bench %s: blocks_per_key %v workers %v", c.op, r["blocks_per_key"], r["workers"])
		}
		kps, _ := r["keys_per_sec"].(float64)
		kb, _ := r["kernel_blocks_per_sec"].(float64)
		ratio, _ := r["ratio"].(float64)
		if kps <= 0 || kb <= 0 || r["keys_per_sec_per_worker"] != kps/2 {
			t.Errorf("bench %s: inconsistent rates in %s", c.op, stdout)
		}
		if want := kps * c.blocksPerK / kb; ratio < want*0.999 || ratio > want*1.001 {
			t.Errorf("bench %s: ratio %v, want %v", c.op, ratio, want)
		}
	}
}

// TestBenchBadInput checks that bad flags exit with status 2.
func TestBenchBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "gen", "--type", "xyz"},
		{"bench", "gen", "--keys", "0"},
		{"bench", "eval", "--in-bits", "65"},
		{"bench", "evalall", "--in-bits", "40"},
		{"bench", "gen", "--workers", "-1"},
		{"bench", "gen", "--kernel", "no-such"},
		{"bench", "gen", "--bogus"},
	} {
		if _, _, code := runKord(t, args...); code != 2 {
			t.Errorf("kord %v: exit %d, want 2", args, code)
		}
	}
}
