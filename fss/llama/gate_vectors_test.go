package llama

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"strconv"
	"testing"
)

// gateVectors is testdata/gate-vectors.json (shared/spec/llama/
// gate-vectors.json): packs made by LLAMA's own dealer code and LLAMA's
// own evaluation of them.
type gateVectors struct {
	Vectors []struct {
		Bits    int              `json:"bits"`
		Shift   int              `json:"shift"`
		Sizes   map[string]int   `json:"pack_bytes"`
		ReLU    []gateVectorPack `json:"relu"`
		ARS     []gateVectorPack `json:"ars"`
		MaxPool []gateVectorPack `json:"maxpool"`
	} `json:"vectors"`
}

type gateVectorPack struct {
	RIn, ROut, R1, R2 string
	Server, Client    string
	Eval              []struct {
		XHat, YHat, X, Y string
		Server, Client   string
		Expected         string
	}
}

func (p *gateVectorPack) UnmarshalJSON(b []byte) error {
	var raw struct {
		RIn    string `json:"r_in"`
		ROut   string `json:"r_out"`
		R1     string `json:"r1"`
		R2     string `json:"r2"`
		Server string `json:"server_hex"`
		Client string `json:"client_hex"`
		Eval   []struct {
			XHat     string `json:"x_hat"`
			YHat     string `json:"y_hat"`
			X        string `json:"x"`
			Y        string `json:"y"`
			Server   string `json:"out_server"`
			Client   string `json:"out_client"`
			Expected string `json:"expected"`
		} `json:"eval"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	p.RIn, p.ROut, p.R1, p.R2, p.Server, p.Client = raw.RIn, raw.ROut, raw.R1, raw.R2, raw.Server, raw.Client
	for _, e := range raw.Eval {
		p.Eval = append(p.Eval, struct {
			XHat, YHat, X, Y string
			Server, Client   string
			Expected         string
		}{e.XHat, e.YHat, e.X, e.Y, e.Server, e.Client, e.Expected})
	}
	return nil
}

func u64(t *testing.T, s string) uint64 {
	t.Helper()
	if s == "" {
		return 0
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("vector value %q: %v", s, err)
	}
	return v
}

// secretsFromPack reads what LLAMA's dealer drew for a pack out of its
// bytes: each DCF's two roots and party 0's share of each share field.
func secretsFromPack(t *testing.T, g Gate, k0, k1 []byte) GateSecrets {
	t.Helper()
	p0, err := ParseGate(g, k0)
	if err != nil {
		t.Fatalf("server pack: %v", err)
	}
	p1, err := ParseGate(g, k1)
	if err != nil {
		t.Fatalf("client pack: %v", err)
	}
	var s GateSecrets
	for d := range p0.DCF {
		s.Roots[d] = [2]Block{p0.DCF[d].Root, p1.DCF[d].Root}
	}
	copy(s.Split[:], p0.Fields)
	return s
}

func TestGateVectors(t *testing.T) {
	js, err := os.ReadFile("testdata/gate-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs gateVectors
	if err := json.Unmarshal(js, &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs.Vectors) == 0 {
		t.Fatal("no vectors")
	}
	packs, evals := 0, 0
	for _, v := range vs.Vectors {
		for _, kind := range []struct {
			g     Gate
			name  string
			packs []gateVectorPack
		}{
			{Gate{Kind: GateReLU, Bits: v.Bits}, "relu", v.ReLU},
			{Gate{Kind: GateARS, Bits: v.Bits, Shift: v.Shift}, "ars", v.ARS},
			{Gate{Kind: GateMaxPool, Bits: v.Bits}, "maxpool", v.MaxPool},
		} {
			g := kind.g
			if got := g.PackSize(); got != v.Sizes[kind.name] {
				t.Errorf("%v: PackSize %d, vectors say %d", g, got, v.Sizes[kind.name])
			}
			for i, vp := range kind.packs {
				want0, _ := hex.DecodeString(vp.Server)
				want1, _ := hex.DecodeString(vp.Client)
				s := secretsFromPack(t, g, want0, want1)
				if g.Kind == GateMaxPool {
					s.RIn = [2]uint64{u64(t, vp.R1), u64(t, vp.R2)}
				} else {
					s.RIn[0] = u64(t, vp.RIn)
				}
				s.ROut = u64(t, vp.ROut)
				size := g.PackSize()
				got0, got1 := make([]byte, size), make([]byte, size)
				if err := GenGates(g, []GateSecrets{s}, got0, got1); err != nil {
					t.Fatalf("%v pack %d: %v", g, i, err)
				}
				if !bytes.Equal(got0, want0) {
					t.Errorf("%v pack %d: server bytes differ from LLAMA's dealer (first at %d)", g, i, firstDiff(got0, want0))
				}
				if !bytes.Equal(got1, want1) {
					t.Errorf("%v pack %d: client bytes differ from LLAMA's dealer (first at %d)", g, i, firstDiff(got1, want1))
				}
				packs++
				p0, _ := ParseGate(g, want0)
				p1, _ := ParseGate(g, want1)
				for _, e := range vp.Eval {
					x, y := u64(t, e.XHat), u64(t, e.YHat)
					o0, err0 := p0.Eval(0, x, y)
					o1, err1 := p1.Eval(1, x, y)
					if err0 != nil || err1 != nil {
						t.Fatalf("%v pack %d: %v %v", g, i, err0, err1)
					}
					if o0 != u64(t, e.Server) || o1 != u64(t, e.Client) {
						t.Errorf("%v pack %d at x̂=%d ŷ=%d: shares %d, %d; LLAMA's %s, %s", g, i, x, y, o0, o1, e.Server, e.Client)
					}
					evals++
				}
			}
		}
	}
	if packs < 30 || evals < 30 {
		t.Fatalf("only %d packs and %d evaluations checked", packs, evals)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
