package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kord-fss/kord/baseline/twopc"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/gates"
)

// TestRunLoopback is the CI-bounded kord compare: small widths on the
// unshaped link, one extrapolated row. Every row's keys were verified by
// Eval during the run (Run fails otherwise); the test checks the counts
// against the protocols' own cost formulas.
func TestRunLoopback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := Config{Link: "loopback", Bits: []int{4, 8, 11}, MaxMeasured: 8, FitBits: []int{3, 6},
		BaselineKeys: 1, KordKeys: 2}
	rep, err := Run(ctx, c, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 2*3*2 {
		t.Fatalf("%d rows, want 12 (2 blocks × 3 widths × 2 tiers)", len(rep.Rows))
	}
	if rep.BaselineSetupRounds != 2 {
		t.Fatalf("baseline setup took %d exchanges, want 2", rep.BaselineSetupRounds)
	}
	for _, r := range rep.Rows {
		typ := fss.DPF
		if r.Block == "DCF" {
			typ = fss.DCF
		}
		p := fss.Params{Type: typ, InBits: r.InBits, OutBits: r.InBits}
		if r.Extrapolated != (r.InBits > c.MaxMeasured) {
			t.Fatalf("%+v: extrapolated flag wrong", r)
		}
		wantKeys := c.KordKeys + 1
		if !r.Extrapolated {
			wantKeys += c.BaselineKeys + 1
		}
		if r.KeysVerified != wantKeys {
			t.Fatalf("%s-%d %s: %d keys verified, want %d", r.Block, r.InBits, r.Tier, r.KeysVerified, wantKeys)
		}
		if r.BaselineRounds != twopc.ExchangesPerKey(p) || r.BaselineBytesPerParty != max(twopc.BytesPerKey(p, 0), twopc.BytesPerKey(p, 1)) {
			t.Fatalf("%s-%d: baseline %d rounds %d bytes, formulas say %d and %d", r.Block, r.InBits,
				r.BaselineRounds, r.BaselineBytesPerParty, twopc.ExchangesPerKey(p), max(twopc.BytesPerKey(p, 0), twopc.BytesPerKey(p, 1)))
		}
		// kord's bound keys: one exchange carrying ⌈ℓ/8⌉ + ⌈n/8⌉ bytes
		// of shares (otp), plus AES-GCM's 36 bytes (mac).
		want := uint64(2 * ((r.InBits + 7) / 8))
		if r.Tier == "mac" {
			want += 36
		}
		if r.KordRounds != 1 || r.KordBytesPerParty != want {
			t.Fatalf("%s-%d %s: kord %d rounds %d bytes, want 1 and %d", r.Block, r.InBits, r.Tier, r.KordRounds, r.KordBytesPerParty, want)
		}
		if r.BytesRatio <= 1 || r.BaselineSeconds <= 0 || r.KordSeconds <= 0 {
			t.Fatalf("%+v: implausible ratios", r)
		}
	}
	if len(rep.Fits) != 2 {
		t.Fatalf("%d fits, want one per block", len(rep.Fits))
	}
	// The JSON rows carry exactly the fields (and the flag).
	var buf bytes.Buffer
	if err := rep.Write(&buf, true); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	fields := []string{"block", "in_bits", "link", "tier", "baseline_rounds", "baseline_bytes_per_party", "baseline_seconds",
		"kord_rounds", "kord_bytes_per_party", "kord_seconds", "bytes_ratio", "time_ratio", "keys_verified"}
	for _, row := range out.Rows {
		var got []string
		for k := range row {
			if k != "extrapolated" {
				got = append(got, k)
			}
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(fields))
		if !slices.Equal(got, want) {
			t.Fatalf("JSON row fields %v, want %v", got, want)
		}
	}
	buf.Reset()
	if err := rep.Write(&buf, false); err != nil || !strings.Contains(buf.String(), "(extrapolated)") {
		t.Fatalf("text report: %v\n%s", err, buf.String())
	}
	png := filepath.Join(t.TempDir(), "compare.png")
	if err := rep.Draw(png); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Fatalf("plot not written: %v", err)
	}
}

// TestFit recovers known coefficients exactly, and clamps a negative
// one to zero.
func TestFit(t *testing.T) {
	a, c := 0.0002, 3e-7
	var pts [][2]float64
	for _, l := range []float64{8, 12, 16, 20} {
		pts = append(pts, [2]float64{l, a*exchanges(fss.DCF, l) + c*math.Exp2(l)})
	}
	f, err := fitSeconds(fss.DCF, "lan", pts)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(f.A-a) > 1e-12 || math.Abs(f.C-c) > 1e-15 {
		t.Fatalf("fit %+v, want A=%g C=%g", f, a, c)
	}
	if got, want := f.at(32), a*exchanges(fss.DCF, 32)+c*math.Exp2(32); math.Abs(got-want) > 1e-6*want {
		t.Fatalf("at(32) = %g, want %g", got, want)
	}
	// Times falling with ℓ would need C < 0: clamped, A alone.
	g, err := fitSeconds(fss.DPF, "lan", [][2]float64{{8, 0.02}, {16, 0.01}})
	if err != nil || g.C != 0 || g.A <= 0 {
		t.Fatalf("clamped fit %+v, %v", g, err)
	}
	// With C given, A alone is recovered.
	if h := fitFixedLeaf(fss.DCF, "wan", pts, c); math.Abs(h.A-a) > 1e-12 {
		t.Fatalf("fixed-leaf fit A=%g, want %g", h.A, a)
	}
	if _, err := fitSeconds(fss.DPF, "lan", pts[:1]); err == nil {
		t.Fatal("a fit on one width was accepted")
	}
}

func TestConfigCheck(t *testing.T) {
	good := DefaultConfig()
	if err := good.Check(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Config){
		"--link":          func(c *Config) { c.Link = "moon" },
		"--bits":          func(c *Config) { c.Bits = []int{0} },
		"--max-measured":  func(c *Config) { c.MaxMeasured = 40 },
		"--baseline-keys": func(c *Config) { c.BaselineKeys = 0 },
		"--kord-keys":     func(c *Config) { c.KordKeys = 0 },
	} {
		c := DefaultConfig()
		mut(&c)
		if err := c.Check(); err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("%s: error %v does not name the flag", name, err)
		}
	}
}

// TestRunShapedFit: on a shaped link the extrapolation takes its 2^ℓ term
// from an unshaped session of the same run: one loopback fit and one link
// fit per block, the link's sharing the loopback's per-leaf time.
func TestRunShapedFit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Link: "lan", Bits: []int{4, 10}, MaxMeasured: 8, FitBits: []int{6, 8},
		BaselineKeys: 1, KordKeys: 1}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Fits) != 4 {
		t.Fatalf("%d fits, want 4 (loopback and lan, per block)", len(rep.Fits))
	}
	for i := 0; i < 4; i += 2 {
		loop, lan := rep.Fits[i], rep.Fits[i+1]
		if loop.Link != "loopback" || lan.Link != "lan" || lan.C != loop.C {
			t.Fatalf("fits %+v and %+v: want the lan fit to reuse the loopback's per-leaf term", loop, lan)
		}
	}
	for _, r := range rep.Rows {
		if r.Link != "lan" || r.Extrapolated != (r.InBits == 10) || r.BaselineSeconds <= 0 {
			t.Fatalf("row %+v", r)
		}
	}
}

func TestMedian(t *testing.T) {
	if m := median([]time.Duration{5, 1, 9}); m != 5 {
		t.Fatalf("median of 5,1,9 = %d", m)
	}
	if m := median([]time.Duration{4, 1, 9, 2}); m != 3 {
		t.Fatalf("median of 4,1,9,2 = %d", m)
	}
}

// TestRunBlocks: every standard gate at ℓ = 5 whose complement is small
// runs on keys from both systems, its outputs checked against plaintext by
// gates.Check; the baseline's rounds and bytes per operation are the sums
// of its per-key formulas over the complement.
func TestRunBlocks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := Config{Link: "loopback", Bits: []int{4}, MaxMeasured: 8, BaselineKeys: 1, KordKeys: 1,
		BlockBits: []int{5}, BlockOps: 1, MaxBlockKeys: 12}
	rep, err := Run(ctx, c, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := gates.StandardGates(5, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]Row{}
	for _, r := range rep.Rows {
		if r.InBits == 5 && r.Tier == "otp" {
			rows[r.Block] = r
		}
	}
	if len(rows)+len(rep.Skipped) != len(gs) {
		t.Fatalf("%d block rows and %d skipped, want %d gates", len(rows), len(rep.Skipped), len(gs))
	}
	for _, g := range gs {
		shapes, err := complement(g)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := rows[gateName(g)]
		if !ok {
			if len(shapes) <= c.MaxBlockKeys {
				t.Fatalf("%s (%d keys) missing", gateName(g), len(shapes))
			}
			continue
		}
		var rounds int
		var perParty [2]uint64
		for _, p := range shapes {
			rounds += twopc.ExchangesPerKey(p)
			perParty[0] += twopc.BytesPerKey(p, 0)
			perParty[1] += twopc.BytesPerKey(p, 1)
		}
		bytes := max(perParty[0], perParty[1])
		// Lockstep batches: at most the keys' exchanges added up, at least
		// the longest key's; the bytes are every key's.
		longest := 0
		for _, p := range shapes {
			longest = max(longest, twopc.ExchangesPerKey(p))
		}
		if r.BaselineRounds > rounds || r.BaselineRounds < longest || r.BaselineBytesPerParty != bytes {
			t.Fatalf("%s: baseline %d rounds %d bytes per op, complement formulas %d..%d and %d", r.Block, r.BaselineRounds, r.BaselineBytesPerParty, longest, rounds, bytes)
		}
		if r.KeysVerified < 2*len(shapes) || r.KordRounds > len(shapes) {
			t.Fatalf("%s: %+v with %d keys per op", r.Block, r, len(shapes))
		}
	}
}
