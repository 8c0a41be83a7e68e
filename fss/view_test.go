package fss

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/internal/prg/prgtest"
)

// sameRefusal fails unless ViewKey and ParseKey agree on data: both accept
// it, or both refuse it with the same error.
func sameRefusal(t testing.TB, data []byte) (KeyView, *Key) {
	t.Helper()
	v, verr := ViewKey(data)
	k, kerr := ParseKey(data)
	switch {
	case (verr == nil) != (kerr == nil):
		t.Fatalf("%x: ViewKey error %v, ParseKey error %v", data, verr, kerr)
	case verr != nil && verr.Error() != kerr.Error():
		t.Fatalf("%x: ViewKey refuses with %q, ParseKey with %q", data, verr, kerr)
	case verr != nil && !v.IsZero():
		t.Fatalf("%x: refused, yet a non-zero view", data)
	}
	return v, k
}

// checkViewEval compares the view's evaluation with the parsed key's at
// xs, and the out-of-range refusal.
func checkViewEval(t testing.TB, v KeyView, k *Key, xs ...uint64) {
	t.Helper()
	if v.Params() != k.Params() || v.Party() != k.Party() {
		t.Fatalf("view is %v party %d, key %v party %d", v.Params(), v.Party(), k.Params(), k.Party())
	}
	if vk, err := v.Key(); err != nil || !vk.Equal(k) {
		t.Fatalf("%v: the view's Key differs from ParseKey's (%v)", k.p, err)
	}
	for _, x := range xs {
		got, verr := v.Eval(x)
		want, kerr := k.Eval(x)
		if (verr == nil) != (kerr == nil) || got != want {
			t.Fatalf("%v party %d x=%#x: view Eval %#x (%v), Key Eval %#x (%v)", k.p, k.party, x, got, verr, want, kerr)
		}
	}
}

// TestKeyViewDifferential pins KeyView's Eval, EvalAll and EvalRange to the
// parsed Key's over random shapes at the byte and word edges, keys at odd
// addresses, and every kernel; the two parties' views add up to f.
func TestKeyViewDifferential(t *testing.T) {
	prgtest.Run(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(21, 22))
		for trial := 0; trial < 64; trial++ {
			p := Params{Type: []Type{DPF, DCF}[trial%2], InBits: diffWidths[r.IntN(len(diffWidths))], OutBits: diffWidths[r.IntN(len(diffWidths))]}
			if trial < 24 {
				p.InBits = 1 + trial/2 // small domains: EvalAll too
			}
			alpha := r.Uint64() & prg.Mask(p.InBits)
			beta := r.Uint64() & prg.Mask(p.OutBits)
			k0, k1, err := GenWithRoots(p, alpha, beta, randRoot(r), randRoot(r))
			if err != nil {
				t.Fatal(err)
			}
			var views [2]KeyView
			for b, k := range []*Key{k0, k1} {
				raw, _ := k.MarshalBinary()
				buf := oddBytes(len(raw))
				copy(buf, raw)
				v, pk := sameRefusal(t, buf)
				if !pk.Equal(k) {
					t.Fatalf("%v: ParseKey does not round-trip", p)
				}
				m := prg.Mask(p.InBits)
				checkViewEval(t, v, k, alpha, (alpha+1)&m, (alpha-1)&m, 0, m, r.Uint64()&m, r.Uint64()&m, m+1, 1<<63)
				if p.InBits <= 12 {
					want, got := make([]uint64, 1<<p.InBits), make([]uint64, 1<<p.InBits)
					if err := k.EvalAll(want); err != nil {
						t.Fatal(err)
					}
					if err := v.EvalAll(got); err != nil {
						t.Fatal(err)
					}
					for x := range want {
						if got[x] != want[x] {
							t.Fatalf("%v party %d: view EvalAll[%d] = %#x, Key %#x", p, b, x, got[x], want[x])
						}
					}
					if err := v.EvalAll(got[1:]); err == nil {
						t.Fatalf("%v: EvalAll took a short output", p)
					}
				}
				lo := r.Uint64() & m
				hi := lo + min(m-lo, 100)
				want, got := make([]uint64, hi-lo), make([]uint64, hi-lo)
				if err := k.EvalRange(lo, hi, want); err != nil {
					t.Fatal(err)
				}
				if err := v.EvalRange(lo, hi, got); err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%v: view EvalRange differs at %d", p, lo+uint64(i))
					}
				}
				views[b] = v
			}
			for _, x := range []uint64{alpha, (alpha + 1) & prg.Mask(p.InBits), r.Uint64() & prg.Mask(p.InBits)} {
				y0, _ := views[0].Eval(x)
				y1, _ := views[1].Eval(x)
				if got, want := (y0+y1)&prg.Mask(p.OutBits), Truth(p, alpha, beta, x); got != want {
					t.Fatalf("%v α=%d β=%d x=%d: views add to %#x, want %#x", p, alpha, beta, x, got, want)
				}
			}
		}
	})
}

// TestKeyViewRefusesLikeParseKey mutates valid keys of many shapes — every
// truncation and extension, every header byte and the bytes at field
// edges set to edge and random values, padding and value bits set — and
// checks that ViewKey accepts and refuses exactly as ParseKey, with the
// same error, and that what it accepts evaluates like the parsed key.
func TestKeyViewRefusesLikeParseKey(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	shapes := []Params{{DPF, 1, 1}, {DPF, 3, 7}, {DCF, 3, 7}, {DPF, 4, 8}, {DCF, 5, 9}, {DCF, 32, 32}, {DPF, 64, 64}, {DCF, 63, 1}, {DCF, 7, 63}}
	for _, p := range shapes {
		k0, _, err := GenWithRoots(p, r.Uint64()&prg.Mask(p.InBits), r.Uint64()&prg.Mask(p.OutBits), randRoot(r), randRoot(r))
		if err != nil {
			t.Fatal(err)
		}
		good, _ := k0.MarshalBinary()
		try := func(bad []byte) {
			v, k := sameRefusal(t, bad)
			if k != nil {
				checkViewEval(t, v, k, 0, prg.Mask(p.InBits), r.Uint64()&prg.Mask(p.InBits))
			}
		}
		for n := 0; n <= len(good)+2; n++ {
			b := make([]byte, n)
			copy(b, good)
			try(b)
		}
		ctrlOff, valOff, vb := p.layout()
		for off := valOff + vb - 1; off < len(good); off += vb { // every value field's top byte
			for _, val := range []byte{0xff, 0x80, byte(1) << uint(p.OutBits%8)} {
				b := append([]byte(nil), good...)
				b[off] |= val
				try(b)
			}
		}
		edges := []int{0, 1, 2, 3, 4, 5, 6, ctrlOff - 1, ctrlOff, valOff - 1, valOff, valOff + vb - 1, len(good) - 1}
		for range 8 {
			edges = append(edges, r.IntN(len(good)))
		}
		for _, i := range edges {
			for _, val := range []byte{0, 1, 2, 3, 0x40, 0x41, 0x4b, 0x7f, 0x80, 0xfe, 0xff, byte(r.Uint32())} {
				b := append([]byte(nil), good...)
				b[i] = val
				try(b)
				for _, nh := range [][2]byte{{byte(p.InBits + 1), byte(p.OutBits)}, {byte(p.InBits), byte(p.OutBits - 1)}} {
					b2 := append([]byte(nil), b...)
					b2[4], b2[5] = nh[0], nh[1]
					try(b2)
				}
			}
		}
	}
	for range 2000 {
		b := make([]byte, r.IntN(80))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if len(b) >= 6 && r.IntN(2) == 0 {
			b[0], b[1], b[2], b[3] = magic, version, byte(1+r.IntN(2)), byte(r.IntN(2))
		}
		try := func(b []byte) { sameRefusal(t, b) }
		try(b)
	}
}

// TestKeyViewStale: the zero view and a view whose bytes were wiped or had
// their header changed are refused by every evaluation, with no panic.
func TestKeyViewStale(t *testing.T) {
	p := Params{DCF, 16, 32}
	k0, _, _ := GenWithRoots(p, 100, 7, prg.Block{1}, prg.Block{2})
	raw, _ := k0.MarshalBinary()
	v, err := ViewKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	var zero KeyView
	out := make([]uint64, 1<<16)
	for name, v := range map[string]KeyView{"zero": zero, "wiped": v, "party changed": v} {
		b := v.Bytes()
		switch name {
		case "wiped":
			b = append([]byte(nil), b...)
			v.b = b
			clear(b)
		case "party changed":
			b = append([]byte(nil), b...)
			v.b = b
			b[3] ^= 1
		}
		if _, err := v.Eval(1); !errors.Is(err, ErrStaleView) {
			t.Errorf("%s: Eval error %v", name, err)
		}
		if err := v.EvalAll(out); !errors.Is(err, ErrStaleView) {
			t.Errorf("%s: EvalAll error %v", name, err)
		}
		if err := v.EvalRange(0, 1, out[:1]); !errors.Is(err, ErrStaleView) {
			t.Errorf("%s: EvalRange error %v", name, err)
		}
		if _, err := v.Key(); !errors.Is(err, ErrStaleView) {
			t.Errorf("%s: Key error %v", name, err)
		}
		e, _ := NewBatchEval(p)
		if err := e.EvalViews([]KeyView{v}, []uint64{1}, []uint64{0}); !errors.Is(err, ErrStaleView) {
			t.Errorf("%s: EvalViews error %v", name, err)
		}
	}
}

// TestSlab views BatchGen's output slabs in place: every key's view and
// BatchEval.EvalSlab / EvalViews agree with the parsed keys, the two
// parties' slabs add up to f, and bad slabs are refused with the index.
func TestSlab(t *testing.T) {
	prgtest.Run(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(25, 26))
		for trial := 0; trial < 8; trial++ {
			p := Params{Type: []Type{DPF, DCF}[trial%2], InBits: diffWidths[r.IntN(len(diffWidths))], OutBits: diffWidths[r.IntN(len(diffWidths))]}
			n := []int{0, 1, GroupKeys - 1, GroupKeys + 1, 2*GroupKeys + 5}[r.IntN(5)]
			alpha, beta, root0, root1 := batchInputs(r, p, n)
			g, err := NewBatchGen(p, BatchOptions{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			ks := p.KeySize()
			out0, out1 := oddBytes(n*ks), oddBytes(n*ks)
			if err := g.GenWithRoots(alpha, beta, root0, root1, out0, out1); err != nil {
				t.Fatal(err)
			}
			s0, err := ViewSlab(out0, p, n)
			if err != nil {
				t.Fatal(err)
			}
			s1, err := ViewSlab(out1, p, n)
			if err != nil {
				t.Fatal(err)
			}
			if s0.Len() != n || s0.Params() != p || (n > 0 && s0.Stride() != ks) {
				t.Fatalf("slab of %d %v: Len %d Params %v Stride %d", n, p, s0.Len(), s0.Params(), s0.Stride())
			}
			xs := make([]uint64, n)
			for i := range xs {
				xs[i] = r.Uint64() & prg.Mask(p.InBits)
				if i%3 == 0 {
					xs[i] = alpha[i]
				}
			}
			e, _ := NewBatchEval(p)
			var y [2][]uint64
			for b, s := range []Slab{s0, s1} {
				y[b] = make([]uint64, n)
				if err := e.EvalSlab(s, xs, y[b]); err != nil {
					t.Fatal(err)
				}
				views := make([]KeyView, n)
				for i := range views {
					views[i] = s.Key(i)
				}
				yv := make([]uint64, n)
				if err := e.EvalViews(views, xs, yv); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < n; i++ {
					k, err := ParseKey(s.Bytes()[i*ks : (i+1)*ks])
					if err != nil {
						t.Fatal(err)
					}
					want, _ := k.Eval(xs[i])
					if y[b][i] != want || yv[i] != want {
						t.Fatalf("%v party %d key %d: EvalSlab %#x, EvalViews %#x, Key.Eval %#x", p, b, i, y[b][i], yv[i], want)
					}
					checkViewEval(t, s.Key(i), k, xs[i])
				}
			}
			for i := 0; i < n; i++ {
				if got, want := (y[0][i]+y[1][i])&prg.Mask(p.OutBits), Truth(p, alpha[i], beta[i], xs[i]); got != want {
					t.Fatalf("%v key %d: shares add to %#x, want %#x", p, i, got, want)
				}
			}
			if n > 0 {
				if _, err := ViewSlab(out0[:len(out0)-1], p, n); !errors.Is(err, ErrLength) {
					t.Fatalf("short slab: %v", err)
				}
				if _, err := ViewSlab(out0, p, n+1); !errors.Is(err, ErrLength) {
					t.Fatalf("slab of n+1: %v", err)
				}
				bad := append([]byte(nil), out0...)
				i := r.IntN(n)
				bad[i*ks] = 0
				_, err := ViewSlab(bad, p, n)
				if !errors.Is(err, ErrMagic) || err.Error() != fmt.Sprintf("fss: slab key %d: %v", i, ErrMagic)+": got 0x00" {
					t.Fatalf("slab with key %d bad: %v", i, err)
				}
				if got := s0.Key(n); !got.IsZero() {
					t.Fatal("Key(Len()) is not the zero view")
				}
				// A key wiped after ViewSlab: its view is zero, EvalSlab refuses.
				clear(out0[i*ks : (i+1)*ks])
				if !s0.Key(i).IsZero() {
					t.Fatal("wiped slab key gives a view")
				}
				if err := e.EvalSlab(s0, xs, y[0]); !errors.Is(err, ErrStaleView) {
					t.Fatalf("EvalSlab on a wiped key: %v", err)
				}
			}
			other := Params{p.Type, p.InBits%64 + 1, p.OutBits}
			if _, err := ViewSlab(out0, other, n); err == nil && n > 0 {
				t.Fatalf("slab of %v read as %v", p, other)
			}
		}
	})
}

// TestKeyViewAllocs: making views and slabs and evaluating them, one key
// or a batch, allocates nothing.
func TestKeyViewAllocs(t *testing.T) {
	for _, p := range []Params{{DPF, 32, 32}, {DCF, 32, 32}, {DCF, 64, 13}} {
		const n = 100
		alpha, beta, root0, root1 := batchInputs(rand.New(rand.NewPCG(1, 2)), p, n)
		out0, _, err := GenBatchWithRoots(p, alpha, beta, root0, root1)
		if err != nil {
			t.Fatal(err)
		}
		ks := p.KeySize()
		e, _ := NewBatchEval(p)
		xs, ys := make([]uint64, n), make([]uint64, n)
		views := make([]KeyView, n)
		s, _ := ViewSlab(out0, p, n)
		for name, f := range map[string]func(){
			"ViewKey+Eval": func() {
				v, err := ViewKey(out0[ks : 2*ks])
				if err != nil {
					t.Fatal(err)
				}
				v.Eval(5)
			},
			"ViewSlab": func() { ViewSlab(out0, p, n) },
			"Slab.Key": func() { s.Key(7).Eval(3) },
			"EvalSlab": func() { e.EvalSlab(s, xs, ys) },
			"EvalViews": func() {
				for i := range views {
					views[i] = s.Key(i)
				}
				e.EvalViews(views, xs, ys)
			},
		} {
			if a := testing.AllocsPerRun(20, f); a != 0 {
				t.Errorf("%v %s: %v allocations", p, name, a)
			}
		}
	}
}

// FuzzKeyView: on any byte string ViewKey never panics, accepts and refuses
// exactly as ParseKey (same error), and an accepted view evaluates as the
// parsed key at the fuzzed point.
func FuzzKeyView(f *testing.F) {
	for _, v := range loadVectors(f) {
		for _, h := range []string{v.Key0, v.Key1} {
			raw, _ := hex.DecodeString(h)
			f.Add(raw, uint64(0))
		}
	}
	k0, k1, _ := GenWithRoots(Params{DCF, 5, 9}, 3, 300, prg.Block{7}, prg.Block{8})
	for _, k := range []*Key{k0, k1} {
		raw, _ := k.MarshalBinary()
		f.Add(raw, uint64(3))
	}
	f.Add([]byte{}, uint64(0))
	f.Add([]byte{0x4b, 0x01, 0x02, 0x00, 0x40, 0x40}, uint64(1))
	f.Fuzz(func(t *testing.T, data []byte, x uint64) {
		v, k := sameRefusal(t, data)
		if k == nil {
			if _, err := v.Eval(x); err == nil {
				t.Fatal("refused key's view evaluates")
			}
			return
		}
		checkViewEval(t, v, k, x, x&prg.Mask(k.p.InBits))
	})
}

// TestKeyViewKeyRefusesChangedValues: a view whose value fields were
// changed after it was made (bits above n) gives no Key — a Key is always
// well formed — while its evaluations still neither panic nor read out of
// the key.
func TestKeyViewKeyRefusesChangedValues(t *testing.T) {
	p := Params{DCF, 8, 13}
	k0, _, _ := GenWithRoots(p, 100, 7, prg.Block{1}, prg.Block{2})
	raw, _ := k0.MarshalBinary()
	v, err := ViewKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	_, valOff, vb := p.layout()
	raw[valOff+vb-1] |= 0x80
	if _, err := v.Key(); !errors.Is(err, ErrStaleView) {
		t.Fatalf("Key of a changed view: %v", err)
	}
	for x := uint64(0); x < 256; x++ {
		if _, err := v.Eval(x); err != nil {
			t.Fatal(err)
		}
	}
}

// TestViewKeysLikeViewKey: ViewKeys over keys laid end to end gives each
// key ViewKey's view, and for a slab with a bad key the first bad key's
// index and ViewKey's error for it, with dst zeroed.
func TestViewKeysLikeViewKey(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	shapes := []Params{{DPF, 1, 1}, {DPF, 3, 7}, {DCF, 3, 7}, {DPF, 4, 8}, {DCF, 5, 9}, {DCF, 32, 32}, {DPF, 64, 64}, {DCF, 63, 1}, {DCF, 7, 63}}
	for _, p := range shapes {
		ks := p.KeySize()
		const n = 4
		var good []byte
		for i := range n / 2 {
			k0, k1, err := GenWithRoots(p, r.Uint64()&prg.Mask(p.InBits), r.Uint64()&prg.Mask(p.OutBits), randRoot(r), randRoot(r))
			if err != nil {
				t.Fatal(err)
			}
			b0, _ := k0.MarshalBinary()
			b1, _ := k1.MarshalBinary()
			if i == 0 {
				good = append(good, b0...)
				good = append(good, b1...)
			} else {
				good = append(good, b1...)
				good = append(good, b0...)
			}
		}
		check := func(buf []byte) {
			t.Helper()
			dst := make([]KeyView, n)
			bad, err := ViewKeys(dst, buf, ks)
			for i := 0; i < n; i++ {
				want, werr := ViewKey(buf[i*ks : (i+1)*ks])
				if werr != nil {
					if err == nil || bad != i || err.Error() != werr.Error() {
						t.Fatalf("%v: key %d refused by ViewKey (%v), ViewKeys: %d, %v", p, i, werr, bad, err)
					}
					for _, v := range dst {
						if !v.IsZero() {
							t.Fatalf("%v: dst not zeroed on error", p)
						}
					}
					return
				}
				if g := dst[i]; err == nil && (g.p != want.p || g.party != want.party || g.tL != want.tL || g.tR != want.tR ||
					g.final != want.final || &g.b[0] != &want.b[0] || len(g.b) != len(want.b) || cap(g.b) != cap(want.b)) {
					t.Fatalf("%v: key %d: ViewKeys %+v, ViewKey %+v", p, i, dst[i], want)
				}
			}
			if err != nil {
				t.Fatalf("%v: ViewKeys refused good keys: %d, %v", p, bad, err)
			}
		}
		check(good)
		ctrlOff, valOff, vb := p.layout()
		for j := range n {
			edges := []int{0, 1, 2, 3, 4, 5, 6, 7, ctrlOff - 1, ctrlOff, valOff - 1, valOff, valOff + vb - 1, ks - 1}
			for range 4 {
				edges = append(edges, r.IntN(ks))
			}
			for _, i := range edges {
				for _, val := range []byte{0, 1, 2, 3, 0x40, 0x4b, 0x80, 0xff, byte(r.Uint32())} {
					b := append([]byte(nil), good...)
					b[j*ks+i] = val
					check(b)
					b[j*ks+4], b[j*ks+5] = byte(p.InBits+1), byte(p.OutBits)
					check(b)
				}
			}
		}
		if _, err := ViewKeys(make([]KeyView, n), good[:len(good)-1], ks); !errors.Is(err, ErrLength) {
			t.Fatalf("%v: short buffer: %v", p, err)
		}
		if _, err := ViewKeys(make([]KeyView, n+1), good, ks); !errors.Is(err, ErrLength) {
			t.Fatalf("%v: n+1 keys: %v", p, err)
		}
	}
	// Keys of two shapes of one size: each viewed as its own shape.
	a, b := Params{DPF, 1, 16}, Params{DCF, 1, 8}
	if a.KeySize() != b.KeySize() {
		t.Fatalf("%v is %d bytes, %v %d", a, a.KeySize(), b, b.KeySize())
	}
	{
		ka, _, err := GenWithRoots(a, 1, 5, randRoot(r), randRoot(r))
		if err != nil {
			t.Fatal(err)
		}
		kb, _, err := GenWithRoots(b, 0, 5, randRoot(r), randRoot(r))
		if err != nil {
			t.Fatal(err)
		}
		ba, _ := ka.MarshalBinary()
		bb, _ := kb.MarshalBinary()
		dst := make([]KeyView, 2)
		if _, err := ViewKeys(dst, append(ba, bb...), a.KeySize()); err != nil || dst[0].Params() != a || dst[1].Params() != b {
			t.Fatalf("mixed shapes: %v, %v %v", err, dst[0].Params(), dst[1].Params())
		}
	}
}
