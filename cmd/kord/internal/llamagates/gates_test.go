package llamagates

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kord-fss/kord/fss/llama"
)

// TestWriteReadVerify: a gates directory from the in-process module pair
// has the files, sizes and JSON fields the issue names, verifies, and is
// byte-identical to kord's in-process dealer for the roots, masks and
// splits it holds; requests split across several requests keep the order.
func TestWriteReadVerify(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "g")
	c := Config{Dir: dir, Bits: 37, Relu: 5, Ars: 4, Shift: 11, MaxPool: 3, PacksPerRequest: 2}
	rep, err := Write(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Packs != 12 {
		t.Fatalf("report: %+v", rep)
	}
	js, err := os.ReadFile(filepath.Join(dir, ParamsJSON))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"profile":"llama","type":"gates","bits":37,"relu":5,"ars":4,"shift":11,"maxpool":3}`; strings.TrimSpace(string(js)) != want {
		t.Fatalf("params.json %s, want %s", js, want)
	}
	var raw map[string]map[string][]string
	mj, _ := os.ReadFile(filepath.Join(dir, ClientMasks))
	if err := json.Unmarshal(mj, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw["relu"]["r_in"]) != 5 || len(raw["ars"]["r_out"]) != 4 || len(raw["maxpool"]["r_in"]) != 6 || len(raw["maxpool"]["r_out"]) != 3 {
		t.Fatalf("client.masks.json: %s", mj)
	}
	f, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(f.Dat[0])) != f.Params.DatBytes() {
		t.Fatal("size")
	}
	if err := f.Verify(16); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Runs() {
		if err := llama.RedealGates(r); err != nil {
			t.Fatal(err)
		}
	}

	// A changed output-mask share opens to a wrong value.
	f.ROut[1][1][2]++
	if err := f.Verify(2); err == nil {
		t.Fatal("a wrong r_out share verified")
	}
	// Files that do not match params.json are refused, naming the file.
	os.WriteFile(filepath.Join(dir, ServerDat), f.Dat[0][:len(f.Dat[0])-1], 0o600)
	if _, err := Read(dir); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "server.dat is") {
		t.Fatalf("truncated server.dat: %v", err)
	}
	os.WriteFile(filepath.Join(dir, ServerDat), f.Dat[0], 0o600)
	os.WriteFile(filepath.Join(dir, ClientMasks), []byte(`{"relu":{"r_in":["1"],"r_out":[]}}`), 0o600)
	if _, err := Read(dir); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "relu.r_in") {
		t.Fatalf("short masks: %v", err)
	}
}

// TestConfigRefusals: bad flags are refused naming the flag, before any
// module is asked.
func TestConfigRefusals(t *testing.T) {
	good := Config{Dir: "x", Bits: 16, Relu: 1, Ars: 1, Shift: 3, MaxPool: 1}
	for _, c := range []struct {
		f    func(*Config)
		want string
	}{
		{func(c *Config) { c.Dir = "" }, "--dir"},
		{func(c *Config) { c.Bits = 7 }, "--bits"},
		{func(c *Config) { c.Bits = 65 }, "--bits"},
		{func(c *Config) { c.Shift = 0 }, "--shift"},
		{func(c *Config) { c.Shift = 16 }, "--shift"},
		{func(c *Config) { c.Relu = -1 }, "--relu"},
		{func(c *Config) { c.Ars = MaxPacks + 1 }, "--ars"},
		{func(c *Config) { c.MaxPool = -2 }, "--maxpool"},
		{func(c *Config) { c.Relu, c.Ars, c.MaxPool = 0, 0, 0 }, "no packs"},
		{func(c *Config) { c.Party0 = "127.0.0.1:1" }, "--party0/--party1"},
	} {
		cc := good
		c.f(&cc)
		_, err := Write(context.Background(), cc)
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a bad input naming %s", cc, err, c.want)
		}
	}
}
