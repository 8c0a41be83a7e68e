package main

import (
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/kord-fss/kord/fss/llama"
	"github.com/kord-fss/kord/internal/kat/vectors"
)

// TestKeygenLlamaVectors: `kord keygen --profile llama` prints LLAMA's own
// key files, byte for byte, for every one of LLAMA's vectors (internal/kat/vectors).
func TestKeygenLlamaVectors(t *testing.T) {
	vs, err := vectors.LoadLlama()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		var beta []string
		for _, b := range v.Payload {
			beta = append(beta, strconv.FormatUint(b, 10))
		}
		keygenVector(t, i, v.Pair, "--profile", "llama", "--type", "dcf",
			"--in-bits", strconv.Itoa(v.InBits), "--out-bits", strconv.Itoa(v.OutBits),
			"--alpha", strconv.FormatUint(v.Alpha, 10), "--beta", strings.Join(beta, ","))
	}
}

// TestKeygenLlamaRandomRoots: without roots the pair still evaluates to
// β·[x < α]; bad input exits 2 naming the problem.
func TestKeygenLlamaRandomRoots(t *testing.T) {
	out, errOut, code := runKord(t, "keygen", "--profile", "llama", "--type", "dcf",
		"--in-bits", "16", "--out-bits", "12", "--alpha", "1000", "--beta", "7,4095")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Fields(out)
	p := llama.Params{InBits: 16, OutBits: 12, Group: 2}
	var keys [2]*llama.Key
	for b := range keys {
		raw, err := hex.DecodeString(lines[b])
		if err != nil {
			t.Fatal(err)
		}
		if keys[b], err = llama.Parse(p, raw); err != nil {
			t.Fatal(err)
		}
	}
	for _, x := range []uint64{0, 999, 1000, 65535} {
		y0, _ := llama.Eval(0, keys[0], x)
		y1, _ := llama.Eval(1, keys[1], x)
		want := []uint64{0, 0}
		if x < 1000 {
			want = []uint64{7, 4095}
		}
		for j := range want {
			if (y0[j]+y1[j])&4095 != want[j] {
				t.Fatalf("x=%d element %d wrong", x, j)
			}
		}
	}
	base := []string{"keygen", "--profile", "llama", "--type", "dcf", "--in-bits", "8", "--out-bits", "8", "--alpha", "3"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(base, "--beta", "256"), "does not fit in 8 bits"},
		{append(base, "--beta", "1", "--root0", strings.Repeat("00", 16), "--root1", strings.Repeat("00", 16)), "equal control bits"},
		{[]string{"keygen", "--profile", "llama", "--type", "dpf", "--in-bits", "8", "--out-bits", "8", "--alpha", "3", "--beta", "1"}, "only --type dcf"},
		{append(base[:8:8], "65", "--alpha", "3", "--beta", "1"), "outside 1..64"},
		{[]string{"keygen", "--profile", "nope", "--type", "dcf", "--in-bits", "8", "--out-bits", "8", "--alpha", "3", "--beta", "1"}, "unknown key profile"},
	} {
		_, errOut, code := runKord(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestBenchGenLlama: `kord bench gen --profile llama --json` reports the
// llama profile's keys/s beside kord-v1's from the same run, and refuses
// shapes the profile lacks.
func TestBenchGenLlama(t *testing.T) {
	out, errOut, code := runKord(t, "bench", "gen", "--profile", "llama", "--type", "dcf",
		"--in-bits", "32", "--out-bits", "32", "--keys", "2000", "--kernel-time", "10ms", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res struct {
		Profile         string  `json:"profile"`
		KeysPerSec      float64 `json:"keys_per_sec"`
		LlamaKeysPerSec float64 `json:"llama_keys_per_sec"`
		LlamaVsKordV1   float64 `json:"llama_vs_kord_v1"`
		LlamaCPUSeconds float64 `json:"llama_cpu_seconds"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if res.Profile != "llama" || res.KeysPerSec <= 0 || res.LlamaKeysPerSec <= 0 || res.LlamaVsKordV1 <= 0 || res.LlamaCPUSeconds <= 0 {
		t.Fatalf("incomplete result: %+v", res)
	}
	_, errOut, code = runKord(t, "bench", "gen", "--profile", "llama", "--type", "dpf", "--keys", "10")
	if code != 2 || !strings.Contains(errOut, "only --type dcf") {
		t.Fatalf("dpf: exit %d, %q", code, errOut)
	}
}
