package fss

import (
	"bytes"
	"crypto/aes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/kord-fss/kord/internal/prg"
)

var updateXor = flag.Bool("update-xor", false, "rewrite testdata/kord-v1-type3-vectors.json")

const xorVectorFile = "testdata/kord-v1-type3-vectors.json"

// ---- naive reference: written from docs/keyformat.md "Type 0x03" alone,
// with crypto/aes directly and one point at a time. ----

func naiveMMO(label string, s [16]byte) [16]byte {
	h := sha256.Sum256([]byte(label))
	c, err := aes.NewCipher(h[:16])
	if err != nil {
		panic(err)
	}
	var o [16]byte
	c.Encrypt(o[:], s[:])
	for i := range o {
		o[i] ^= s[i]
	}
	return o
}

func naiveChild(s [16]byte, right int) ([16]byte, int) {
	label := "kord/v1/prg/seed-left"
	if right == 1 {
		label = "kord/v1/prg/seed-right"
	}
	o := naiveMMO(label, s)
	t := int(o[0] & 1)
	o[0] &^= 1
	return o, t
}

func naiveXor(a, b [16]byte) [16]byte {
	for i := range a {
		a[i] ^= b[i]
	}
	return a
}

// naiveGen returns both serialized keys.
func naiveGen(l int, alpha uint64, beta int, r0, r1 [16]byte) (k0, k1 []byte) {
	nu := l
	if nu > 7 {
		nu = 7
	}
	d := l - nu
	s := [2][16]byte{r0, r1}
	t := [2]int{0, 1}
	var scw [][16]byte
	ctrl := make([]int, 0, 2*d)
	for j := 1; j <= d; j++ {
		a := int(alpha>>uint(l-j)) & 1
		var ch [2][2][16]byte // [party][side]
		var tc [2][2]int
		for b := 0; b < 2; b++ {
			for side := 0; side < 2; side++ {
				ch[b][side], tc[b][side] = naiveChild(s[b], side)
			}
		}
		keep, lose := a, 1-a
		cw := naiveXor(ch[0][lose], ch[1][lose])
		tcw := [2]int{tc[0][0] ^ tc[1][0] ^ a ^ 1, tc[0][1] ^ tc[1][1] ^ a}
		for b := 0; b < 2; b++ {
			ns := ch[b][keep]
			if t[b] == 1 {
				ns = naiveXor(ns, cw)
			}
			t[b] = tc[b][keep] ^ (t[b] & tcw[keep])
			s[b] = ns
		}
		scw = append(scw, cw)
		ctrl = append(ctrl, tcw[0], tcw[1])
	}
	w0 := naiveMMO("kord/v1/prg/value-left", s[0])
	w1 := naiveMMO("kord/v1/prg/value-left", s[1])
	leaf := naiveXor(w0, w1)
	pos := alpha % (1 << uint(nu))
	leaf[pos/8] ^= byte(beta) << (pos % 8)
	body := func(b int, root [16]byte) []byte {
		out := []byte{0x4b, 0x01, 0x03, byte(b), byte(l), 1}
		out = append(out, root[:]...)
		for _, c := range scw {
			out = append(out, c[:]...)
		}
		packed := make([]byte, (2*d+7)/8)
		for i, bit := range ctrl {
			packed[i/8] |= byte(bit) << (i % 8)
		}
		out = append(out, packed...)
		return append(out, leaf[:]...)
	}
	return body(0, r0), body(1, r1)
}

// naiveEval evaluates a serialized key at x.
func naiveEval(key []byte, x uint64) int {
	b, l := int(key[3]), int(key[4])
	nu := min(l, 7)
	d := l - nu
	var s [16]byte
	copy(s[:], key[6:22])
	t := b
	ctrlOff := 22 + 16*d
	for j := 1; j <= d; j++ {
		xj := int(x>>uint(l-j)) & 1
		ch, tc := naiveChild(s, xj)
		if t == 1 {
			var cw [16]byte
			copy(cw[:], key[22+16*(j-1):])
			ch = naiveXor(ch, cw)
			i := 2*(j-1) + xj
			tc ^= int(key[ctrlOff+i/8]>>(i%8)) & 1
		}
		s, t = ch, tc
	}
	w := naiveMMO("kord/v1/prg/value-left", s)
	if t == 1 {
		var cw [16]byte
		copy(cw[:], key[len(key)-16:])
		w = naiveXor(w, cw)
	}
	pos := x % (1 << uint(nu))
	return int(w[pos/8]>>(pos%8)) & 1
}

// ---- vectors ----

type xorVector struct {
	InBits        int       `json:"in_bits"`
	Alpha         uint64    `json:"alpha"`
	Beta          uint8     `json:"beta"`
	Root0         string    `json:"root0"`
	Root1         string    `json:"root1"`
	Key0          string    `json:"key0"`
	Key1          string    `json:"key1"`
	Evals         []xorEval `json:"evals"`
	EvalAll0SHA   string    `json:"evalall0_sha256,omitempty"`
	EvalAll1SHA   string    `json:"evalall1_sha256,omitempty"`
	EvalAllLeaves int       `json:"evalall_leaf_words,omitempty"`
}

type xorEval struct {
	X  uint64 `json:"x"`
	Y0 uint8  `json:"y0"`
	Y1 uint8  `json:"y1"`
}

func labelRoot(label string) [16]byte {
	h := sha256.Sum256([]byte(label))
	var r [16]byte
	copy(r[:], h[:16])
	return r
}

func makeXorVectors(t *testing.T) []xorVector {
	cases := []struct {
		l     int
		alpha uint64
		beta  uint8
	}{
		{1, 1, 1}, {3, 5, 1}, {7, 100, 1}, {8, 200, 1}, {10, 777, 0},
		{12, 3000, 1}, {16, 0xBEEF, 1}, {20, 0xABCDE, 1}, {33, 1<<32 | 12345, 1}, {64, 0xFEDCBA9876543210, 1},
	}
	var vs []xorVector
	for i, c := range cases {
		r0 := labelRoot(fmt.Sprintf("kord/v1/test/type3/%d/root0", i))
		r1 := labelRoot(fmt.Sprintf("kord/v1/test/type3/%d/root1", i))
		k0, k1, err := GenXorWithRoots(c.l, c.alpha, c.beta, r0, r1)
		if err != nil {
			t.Fatal(err)
		}
		b0, _ := k0.MarshalBinary()
		b1, _ := k1.MarshalBinary()
		v := xorVector{InBits: c.l, Alpha: c.alpha, Beta: c.beta,
			Root0: hex.EncodeToString(r0[:]), Root1: hex.EncodeToString(r1[:]),
			Key0: hex.EncodeToString(b0), Key1: hex.EncodeToString(b1)}
		mask := prg.Mask(c.l)
		xs := []uint64{c.alpha, c.alpha ^ 1, (c.alpha + 1) & mask, 0, mask, (c.alpha * 2654435761) & mask}
		for _, x := range xs {
			y0, _ := k0.Eval(x)
			y1, _ := k1.Eval(x)
			v.Evals = append(v.Evals, xorEval{X: x, Y0: y0, Y1: y1})
		}
		if k0.Depth() <= 13 {
			v.EvalAllLeaves = int(k0.Leaves())
			v.EvalAll0SHA = evalAllHash(t, k0)
			v.EvalAll1SHA = evalAllHash(t, k1)
		}
		vs = append(vs, v)
	}
	return vs
}

func evalAllHash(t *testing.T, k *XorKey) string {
	out := make([]prg.Block, k.Leaves())
	if err := k.EvalAll(out); err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for i := range out {
		h.Write(out[i][:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestXorVectors(t *testing.T) {
	if *updateXor {
		vs := makeXorVectors(t)
		data, err := json.MarshalIndent(vs, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(xorVectorFile, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(xorVectorFile)
	if err != nil {
		t.Fatal(err)
	}
	var vs []xorVector
	if err := json.Unmarshal(data, &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs) == 0 {
		t.Fatal("no vectors")
	}
	for _, v := range vs {
		var r0, r1 [16]byte
		mustHex(t, v.Root0, r0[:])
		mustHex(t, v.Root1, r1[:])
		k0, k1, err := GenXorWithRoots(v.InBits, v.Alpha, v.Beta, r0, r1)
		if err != nil {
			t.Fatal(err)
		}
		b0, _ := k0.MarshalBinary()
		b1, _ := k1.MarshalBinary()
		if hex.EncodeToString(b0) != v.Key0 || hex.EncodeToString(b1) != v.Key1 {
			t.Fatalf("ℓ=%d: keys differ from the vector", v.InBits)
		}
		// The independent reference must produce the same bytes.
		n0, n1 := naiveGen(v.InBits, v.Alpha, int(v.Beta), r0, r1)
		if !bytes.Equal(n0, b0) || !bytes.Equal(n1, b1) {
			t.Fatalf("ℓ=%d: naive reference keys differ", v.InBits)
		}
		if len(b0) != XorKeySize(v.InBits) {
			t.Fatalf("ℓ=%d: key size %d, want %d", v.InBits, len(b0), XorKeySize(v.InBits))
		}
		for _, e := range v.Evals {
			y0, _ := k0.Eval(e.X)
			y1, _ := k1.Eval(e.X)
			if y0 != e.Y0 || y1 != e.Y1 {
				t.Fatalf("ℓ=%d x=%d: eval (%d,%d), vector (%d,%d)", v.InBits, e.X, y0, y1, e.Y0, e.Y1)
			}
			if naiveEval(b0, e.X) != int(e.Y0) || naiveEval(b1, e.X) != int(e.Y1) {
				t.Fatalf("ℓ=%d x=%d: naive eval differs", v.InBits, e.X)
			}
			want := uint8(0)
			if e.X == v.Alpha {
				want = v.Beta
			}
			if e.Y0^e.Y1 != want {
				t.Fatalf("ℓ=%d x=%d: shares XOR to %d, want %d", v.InBits, e.X, e.Y0^e.Y1, want)
			}
		}
		if v.EvalAll0SHA != "" {
			if evalAllHash(t, k0) != v.EvalAll0SHA || evalAllHash(t, k1) != v.EvalAll1SHA {
				t.Fatalf("ℓ=%d: EvalAll hash differs", v.InBits)
			}
		}
	}
}

func mustHex(t *testing.T, s string, dst []byte) {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(dst) {
		t.Fatalf("bad hex %q", s)
	}
	copy(dst, b)
}

// TestXorExhaustive checks EvalAll, EvalLeaves and Eval against the naive
// reference and the point function, for every x of small domains.
func TestXorExhaustive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for l := 1; l <= 12; l++ {
		for trial := 0; trial < 3; trial++ {
			alpha := rng.Uint64() & prg.Mask(l)
			beta := uint8(1)
			if trial == 2 {
				beta = 0
			}
			k0, k1, err := GenXor(nil, l, alpha, beta)
			if err != nil {
				t.Fatal(err)
			}
			b0, _ := k0.MarshalBinary()
			b1, _ := k1.MarshalBinary()
			a0 := make([]prg.Block, k0.Leaves())
			a1 := make([]prg.Block, k1.Leaves())
			if err := k0.EvalAll(a0); err != nil {
				t.Fatal(err)
			}
			if err := k1.EvalAll(a1); err != nil {
				t.Fatal(err)
			}
			for x := uint64(0); x < 1<<uint(l); x++ {
				y0, _ := k0.Eval(x)
				y1, _ := k1.Eval(x)
				want := uint8(0)
				if x == alpha {
					want = beta
				}
				if y0^y1 != want {
					t.Fatalf("ℓ=%d α=%d x=%d: %d^%d", l, alpha, x, y0, y1)
				}
				if l <= 9 && (naiveEval(b0, x) != int(y0) || naiveEval(b1, x) != int(y1)) {
					t.Fatalf("ℓ=%d x=%d: naive eval differs", l, x)
				}
				e0 := a0[x/128][x%128/8] >> (x % 8) & 1
				e1 := a1[x/128][x%128/8] >> (x % 8) & 1
				if e0 != y0 || e1 != y1 {
					t.Fatalf("ℓ=%d x=%d: EvalAll (%d,%d) vs Eval (%d,%d)", l, x, e0, e1, y0, y1)
				}
			}
			if l < 7 { // output bits at and above 2^ℓ are zero
				for _, a := range [][]prg.Block{a0, a1} {
					for x := 1 << uint(l); x < 128; x++ {
						if a[0][x/8]>>(x%8)&1 != 0 {
							t.Fatalf("ℓ=%d: unused bit %d set", l, x)
						}
					}
				}
			}
			// Every sub-range equals the slice of EvalAll.
			n := k0.Leaves()
			for lo := uint64(0); lo < n; lo++ {
				for hi := lo + 1; hi <= n; hi += 1 + hi/3 {
					part := make([]prg.Block, hi-lo)
					if err := k0.EvalLeaves(lo, part); err != nil {
						t.Fatal(err)
					}
					for i := range part {
						if part[i] != a0[lo+uint64(i)] {
							t.Fatalf("ℓ=%d EvalLeaves[%d,%d) differs at %d", l, lo, hi, i)
						}
					}
				}
			}
		}
	}
}

func TestXorFrontier(t *testing.T) {
	k0, _, err := GenXor(nil, 18, 123456, 1)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]prg.Block, k0.Leaves())
	if err := k0.EvalAll(all); err != nil {
		t.Fatal(err)
	}
	for depth := 0; depth <= k0.Depth(); depth++ {
		nodes, err := k0.Frontier(depth)
		if err != nil {
			t.Fatal(err)
		}
		per := len(all) / len(nodes)
		buf := make([]prg.Block, per)
		for i := range nodes {
			if err := k0.ExpandNode(&nodes[i], buf); err != nil {
				t.Fatal(err)
			}
			for j := range buf {
				if buf[j] != all[i*per+j] {
					t.Fatalf("depth %d node %d leaf %d differs", depth, i, j)
				}
			}
		}
	}
	if _, err := k0.Frontier(k0.Depth() + 1); err == nil {
		t.Fatal("frontier below the leaves accepted")
	}
}

// TestXorWide checks random points of wide domains, and that off-path
// shares agree on every leaf word except α's (the DPF invariant).
func TestXorWide(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, l := range []int{20, 33, 47, 64} {
		alpha := rng.Uint64() & prg.Mask(l)
		k0, k1, err := GenXor(nil, l, alpha, 1)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 200; i++ {
			x := rng.Uint64() & prg.Mask(l)
			if i%4 == 0 {
				x = alpha ^ uint64(i%128)
			}
			y0, _ := k0.Eval(x)
			y1, _ := k1.Eval(x)
			if (y0^y1 == 1) != (x == alpha) {
				t.Fatalf("ℓ=%d x=%d wrong", l, x)
			}
		}
	}
	k0, k1, _ := GenXor(nil, 20, 0x5A5A5, 1)
	a0, a1 := make([]prg.Block, k0.Leaves()), make([]prg.Block, k1.Leaves())
	_ = k0.EvalAll(a0)
	_ = k1.EvalAll(a1)
	for i := range a0 {
		d := xorBlock(a0[i], a1[i])
		var want prg.Block
		if uint64(i) == 0x5A5A5/128 {
			want[0x5A5A5%128/8] = 1 << (0x5A5A5 % 8)
		}
		if d != want {
			t.Fatalf("leaf %d: XOR of shares is %x", i, d)
		}
	}
}

func TestXorParseErrors(t *testing.T) {
	k0, _, _ := GenXor(nil, 12, 77, 1)
	good, _ := k0.MarshalBinary()
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := []struct {
		data []byte
		err  error
	}{
		{good[:3], ErrLength},
		{mut(func(b []byte) []byte { b[0] = 0; return b }), ErrMagic},
		{mut(func(b []byte) []byte { b[1] = 2; return b }), ErrVersion},
		{mut(func(b []byte) []byte { b[2] = 1; return b }), ErrXorType},
		{mut(func(b []byte) []byte { b[3] = 2; return b }), ErrParty},
		{mut(func(b []byte) []byte { b[4] = 0; return b }), ErrInBits},
		{mut(func(b []byte) []byte { b[4] = 65; return b }), ErrInBits},
		{mut(func(b []byte) []byte { b[5] = 8; return b }), ErrXorOutBits},
		{mut(func(b []byte) []byte { return b[:len(b)-1] }), ErrLength},
		{mut(func(b []byte) []byte { return append(b, 0) }), ErrLength},
		{mut(func(b []byte) []byte { b[len(b)-17] |= 0x80; return b }), ErrControlBits},
	}
	for i, c := range cases {
		if _, err := ParseXorKey(c.data); !errors.Is(err, c.err) {
			t.Errorf("case %d: got %v, want %v", i, err, c.err)
		}
	}
	k, err := ParseXorKey(good)
	if err != nil || !k.Equal(k0) {
		t.Fatalf("round trip failed: %v", err)
	}
	// A DPF key of type 0x01 is not a type 0x03 key, and vice versa.
	d0, _, _ := Gen(nil, Params{Type: DPF, InBits: 12, OutBits: 1}, 77, 1)
	db, _ := d0.MarshalBinary()
	if _, err := ParseXorKey(db); !errors.Is(err, ErrXorType) {
		t.Fatalf("type 0x01 parsed as 0x03: %v", err)
	}
	if _, err := ParseKey(good); err == nil {
		t.Fatal("type 0x03 parsed as a 0x01/0x02 key")
	}
}

func TestXorBadArguments(t *testing.T) {
	if _, _, err := GenXor(nil, 0, 0, 1); err == nil {
		t.Error("ℓ = 0 accepted")
	}
	if _, _, err := GenXor(nil, 65, 0, 1); err == nil {
		t.Error("ℓ = 65 accepted")
	}
	if _, _, err := GenXor(nil, 8, 256, 1); err == nil {
		t.Error("α out of range accepted")
	}
	if _, _, err := GenXor(nil, 8, 3, 2); err == nil {
		t.Error("β = 2 accepted")
	}
	k0, _, _ := GenXor(nil, 10, 3, 1)
	if _, err := k0.Eval(1024); err == nil {
		t.Error("x out of range accepted")
	}
	if err := k0.EvalAll(make([]prg.Block, 4)); err == nil {
		t.Error("short EvalAll output accepted")
	}
	if err := k0.EvalLeaves(7, make([]prg.Block, 2)); err == nil {
		t.Error("EvalLeaves past the end accepted")
	}
}

func FuzzParseXorKey(f *testing.F) {
	for _, l := range []int{1, 7, 8, 20, 64} {
		k0, _, _ := GenXor(nil, l, 1, 1)
		b, _ := k0.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte{0x4b, 1, 3, 0, 7, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := ParseXorKey(data)
		if err != nil {
			return
		}
		b, err := k.MarshalBinary()
		if err != nil || !bytes.Equal(b, data) {
			t.Fatalf("accepted key does not re-serialize to the same bytes")
		}
		if _, err := k.Eval(0); err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkXorEvalAll20 is EvalAll of 2^20 one-bit outputs (d = 13).
func BenchmarkXorEvalAll20(b *testing.B) {
	k0, _, _ := GenXor(nil, 20, 12345, 1)
	out := make([]prg.Block, k0.Leaves())
	b.SetBytes(1 << 20 / 8)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := k0.EvalAll(out); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkXorEvalAll24(b *testing.B) {
	k0, _, _ := GenXor(nil, 24, 12345, 1)
	out := make([]prg.Block, k0.Leaves())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := k0.EvalAll(out); err != nil {
			b.Fatal(err)
		}
	}
}
