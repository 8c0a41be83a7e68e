package fss

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/kord-fss/kord/internal/kat/vectors"
	"github.com/kord-fss/kord/internal/prg"
)

// loadVectors returns the kord-v1 known-answer vectors.
func loadVectors(t testing.TB) []vectors.Vector {
	t.Helper()
	vs, err := vectors.Load()
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

func mustBlock(t testing.TB, h string) (b [16]byte) {
	t.Helper()
	raw, err := hex.DecodeString(h)
	if err != nil || len(raw) != 16 {
		t.Fatalf("bad root %q", h)
	}
	copy(b[:], raw)
	return
}

// TestVectors reproduces every shared known-answer vector byte for byte:
// generation, serialization, parsing and evaluation.
func TestVectors(t *testing.T) {
	for i, v := range loadVectors(t) {
		typ, err := ParseType(v.Type)
		if err != nil {
			t.Fatal(err)
		}
		p := Params{Type: typ, InBits: v.InBits, OutBits: v.OutBits}
		k0, k1, err := GenWithRoots(p, v.Alpha, v.Beta, mustBlock(t, v.Root0), mustBlock(t, v.Root1))
		if err != nil {
			t.Fatalf("vector %d: %v", i, err)
		}
		for b, pair := range []struct {
			k    *Key
			want string
		}{{k0, v.Key0}, {k1, v.Key1}} {
			raw, _ := pair.k.MarshalBinary()
			if got := hex.EncodeToString(raw); got != pair.want {
				t.Fatalf("vector %d (%v) key%d:\n got %s\nwant %s", i, p, b, got, pair.want)
			}
			if len(raw) != p.KeySize() {
				t.Fatalf("vector %d: KeySize %d, serialized %d", i, p.KeySize(), len(raw))
			}
			parsed, err := ParseKey(raw)
			if err != nil || !parsed.Equal(pair.k) {
				t.Fatalf("vector %d key%d: parse back: %v", i, b, err)
			}
		}
		for _, e := range v.Evals {
			y0, err0 := k0.Eval(e.X)
			y1, err1 := k1.Eval(e.X)
			if err0 != nil || err1 != nil || y0 != e.Y0 || y1 != e.Y1 {
				t.Fatalf("vector %d x=%d: got (%d,%d) want (%d,%d)", i, e.X, y0, y1, e.Y0, e.Y1)
			}
		}
	}
}

// TestKeySizesFromSpec checks the sizes the spec states.
func TestKeySizesFromSpec(t *testing.T) {
	if got := (Params{DPF, 32, 32}).KeySize(); got != 6+540 {
		t.Errorf("DPF 32/32 key is %d bytes, spec says 6+540", got)
	}
	if got := (Params{DCF, 32, 32}).KeySize(); got != 6+668 {
		t.Errorf("DCF 32/32 key is %d bytes, spec says 6+668", got)
	}
}

func randRoot(r *rand.Rand) (b [16]byte) {
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return
}

// TestExhaustiveSmall checks every α and every x for ℓ ≤ 10, n ∈ {1,7,32,64},
// both types, through EvalAll; and Eval against EvalAll pointwise for ℓ ≤ 5.
func TestExhaustiveSmall(t *testing.T) {
	maxL := 10
	if testing.Short() {
		maxL = 7
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []Type{DPF, DCF} {
		for _, n := range []int{1, 7, 32, 64} {
			for l := 1; l <= maxL; l++ {
				p := Params{typ, l, n}
				out0 := make([]uint64, 1<<l)
				out1 := make([]uint64, 1<<l)
				for alpha := uint64(0); alpha < 1<<l; alpha++ {
					beta := r.Uint64() & prg.Mask(n)
					if alpha == 0 {
						beta = prg.Mask(n) // the largest payload at least once
					}
					k0, k1, err := GenWithRoots(p, alpha, beta, randRoot(r), randRoot(r))
					if err != nil {
						t.Fatal(err)
					}
					if err := k0.EvalAll(out0); err != nil {
						t.Fatal(err)
					}
					if err := k1.EvalAll(out1); err != nil {
						t.Fatal(err)
					}
					for x := range out0 {
						want := Truth(p, alpha, beta, uint64(x))
						if got := (out0[x] + out1[x]) & prg.Mask(n); got != want {
							t.Fatalf("%v α=%d β=%d x=%d: shares sum to %d, want %d", p, alpha, beta, x, got, want)
						}
						if l <= 5 {
							y0, _ := k0.Eval(uint64(x))
							y1, _ := k1.Eval(uint64(x))
							if y0 != out0[x] || y1 != out1[x] {
								t.Fatalf("%v α=%d x=%d: Eval (%d,%d) != EvalAll (%d,%d)", p, alpha, x, y0, y1, out0[x], out1[x])
							}
						}
					}
				}
			}
		}
	}
}

// TestRandomWide checks ℓ = 32 and 64 at the edge points around α.
func TestRandomWide(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, typ := range []Type{DPF, DCF} {
		for _, l := range []int{32, 64} {
			for _, n := range []int{1, 7, 32, 64} {
				p := Params{typ, l, n}
				for trial := 0; trial < 40; trial++ {
					alpha := r.Uint64() & prg.Mask(l)
					switch trial {
					case 0:
						alpha = 0
					case 1:
						alpha = prg.Mask(l)
					}
					beta := r.Uint64() & prg.Mask(n)
					k0, k1, err := Gen(nil, p, alpha, beta)
					if err != nil {
						t.Fatal(err)
					}
					xs := []uint64{alpha, alpha + 1, alpha - 1, 0, prg.Mask(l), r.Uint64()}
					for _, x := range xs {
						x &= prg.Mask(l)
						y0, _ := k0.Eval(x)
						y1, _ := k1.Eval(x)
						if got, want := (y0+y1)&prg.Mask(n), Truth(p, alpha, beta, x); got != want {
							t.Fatalf("%v α=%d β=%d x=%d: got %d want %d", p, alpha, beta, x, got, want)
						}
					}
				}
			}
		}
	}
}

// TestEvalRange checks ranges that cut subtrees at odd places, at widths
// where EvalAll is impossible.
func TestEvalRange(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, typ := range []Type{DPF, DCF} {
		for _, l := range []int{3, 9, 13, 32, 64} {
			p := Params{typ, l, 16}
			alpha := r.Uint64() & prg.Mask(l)
			k0, k1, _ := Gen(nil, p, alpha, 12345)
			for trial := 0; trial < 20; trial++ {
				span := uint64(1 + r.IntN(700))
				lo := alpha - uint64(r.IntN(int(span)))
				if alpha < span {
					lo = 0
				}
				hi := lo + span
				if hi-1 > prg.Mask(l) || hi < lo {
					hi = prg.Mask(l) // stay inside the domain (excludes the last point)
				}
				out0 := make([]uint64, hi-lo)
				out1 := make([]uint64, hi-lo)
				if err := k0.EvalRange(lo, hi, out0); err != nil {
					t.Fatal(err)
				}
				if err := k1.EvalRange(lo, hi, out1); err != nil {
					t.Fatal(err)
				}
				for i := range out0 {
					x := lo + uint64(i)
					y0, _ := k0.Eval(x)
					if y0 != out0[i] {
						t.Fatalf("%v x=%d: EvalRange %d, Eval %d", p, x, out0[i], y0)
					}
					if got, want := (out0[i]+out1[i])&0xffff, Truth(p, alpha, 12345, x); got != want {
						t.Fatalf("%v x=%d: got %d want %d", p, x, got, want)
					}
				}
			}
		}
	}
}

func TestBadArguments(t *testing.T) {
	if _, _, err := GenWithRoots(Params{DPF, 8, 8}, 256, 1, [16]byte{}, [16]byte{}); err == nil {
		t.Error("α ≥ 2^ℓ accepted")
	}
	if _, _, err := GenWithRoots(Params{DPF, 8, 8}, 1, 256, [16]byte{}, [16]byte{}); err == nil {
		t.Error("β ≥ 2^n accepted")
	}
	for _, p := range []Params{{DPF, 0, 8}, {DPF, 65, 8}, {DCF, 8, 0}, {DCF, 8, 65}, {3, 8, 8}} {
		if _, _, err := GenWithRoots(p, 0, 0, [16]byte{}, [16]byte{}); err == nil {
			t.Errorf("%v accepted", p)
		}
	}
	k0, _, _ := Gen(nil, Params{DPF, 8, 8}, 3, 4)
	if _, err := k0.Eval(256); err == nil {
		t.Error("x ≥ 2^ℓ accepted")
	}
	if err := k0.EvalAll(make([]uint64, 255)); err == nil {
		t.Error("short EvalAll output accepted")
	}
	if err := k0.EvalRange(10, 257, make([]uint64, 247)); err == nil {
		t.Error("range beyond the domain accepted")
	}
	if err := k0.EvalRange(10, 20, make([]uint64, 9)); err == nil {
		t.Error("range with wrong output length accepted")
	}
}

// TestParseErrors checks that each malformed field gives its own error.
func TestParseErrors(t *testing.T) {
	k0, _, _ := GenWithRoots(Params{DCF, 5, 12}, 7, 100, [16]byte{1}, [16]byte{2})
	good, _ := k0.MarshalBinary()
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	vcwOff := 6 + 16 + 16*5 + 2
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrLength},
		{"magic", mut(func(b []byte) []byte { b[0] = 0x4c; return b }), ErrMagic},
		{"version", mut(func(b []byte) []byte { b[1] = 2; return b }), ErrVersion},
		{"type", mut(func(b []byte) []byte { b[2] = 3; return b }), ErrType},
		{"party", mut(func(b []byte) []byte { b[3] = 2; return b }), ErrParty},
		{"in bits 0", mut(func(b []byte) []byte { b[4] = 0; return b }), ErrInBits},
		{"in bits 65", mut(func(b []byte) []byte { b[4] = 65; return b }), ErrInBits},
		{"out bits 0", mut(func(b []byte) []byte { b[5] = 0; return b }), ErrOutBits},
		{"out bits 65", mut(func(b []byte) []byte { b[5] = 65; return b }), ErrOutBits},
		{"short", good[:len(good)-1], ErrLength},
		{"long", append(bytes.Clone(good), 0), ErrLength},
		{"other width", mut(func(b []byte) []byte { b[4] = 6; return b }), ErrLength},
		{"control bits", mut(func(b []byte) []byte { b[vcwOff-1] |= 0x80; return b }), ErrControlBits},
		{"value bits", mut(func(b []byte) []byte { b[vcwOff+1] |= 0x10; return b }), ErrValueBits},
		{"final bits", mut(func(b []byte) []byte { b[len(b)-1] |= 0x80; return b }), ErrValueBits},
	}
	for _, c := range cases {
		_, err := ParseKey(c.data)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := ParseKey(good); err != nil {
		t.Fatal(err)
	}
}

// TestSingleByteMutations: every single-byte change of a valid key either
// fails to parse or parses to a different key (the encoding is injective and
// has no ignored bits).
func TestSingleByteMutations(t *testing.T) {
	for _, p := range []Params{{DPF, 9, 13}, {DCF, 7, 5}, {DPF, 32, 32}} {
		k0, _, _ := Gen(nil, p, 5, 3)
		good, _ := k0.MarshalBinary()
		for i := range good {
			for v := 0; v < 256; v++ {
				if byte(v) == good[i] {
					continue
				}
				bad := bytes.Clone(good)
				bad[i] = byte(v)
				k, err := ParseKey(bad)
				if err == nil && k.Equal(k0) {
					t.Fatalf("%v: byte %d set to %#02x parses to the same key", p, i, v)
				}
				if err == nil {
					again, _ := k.MarshalBinary()
					if !bytes.Equal(again, bad) {
						t.Fatalf("%v: byte %d = %#02x does not round-trip", p, i, v)
					}
				}
			}
		}
	}
}

func FuzzUnmarshalBinary(f *testing.F) {
	for _, v := range loadVectors(f) {
		for _, h := range []string{v.Key0, v.Key1} {
			raw, _ := hex.DecodeString(h)
			f.Add(raw)
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0x4b, 0x01, 0x02, 0x00, 0x40, 0x40})
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := ParseKey(data)
		if err != nil {
			return
		}
		again, err := k.MarshalBinary()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("accepted key does not round-trip")
		}
		if _, err := k.Eval(0); err != nil {
			t.Fatal(err)
		}
	})
}
