package llama

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kord-fss/kord/internal/kat/vectors"
)

// vector is one of LLAMA's DCF vectors (internal/kat/vectors, the spec's
// shared/spec/llama/dcf-vectors.json).
type vector = vectors.Llama

func loadVectors(t testing.TB) []vector {
	t.Helper()
	vs, err := vectors.LoadLlama()
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

func block(t testing.TB, h string) (b Block) {
	t.Helper()
	raw, err := hex.DecodeString(h)
	if err != nil || len(raw) != 16 {
		t.Fatalf("bad root %q", h)
	}
	copy(b[:], raw)
	return b
}

// TestVectors: from each vector's two roots, Gen reproduces both of LLAMA's
// key files byte for byte; the files parse back to the same keys; Eval on
// the parsed keys gives LLAMA's own evaluation shares at every listed point,
// and those shares reconstruct payload·[x < α].
func TestVectors(t *testing.T) {
	for i, v := range loadVectors(t) {
		p := Params{InBits: v.InBits, OutBits: v.OutBits, Group: len(v.Payload)}
		k0, k1, err := Gen(p, v.Alpha, v.Payload, block(t, v.Root0), block(t, v.Root1))
		if err != nil {
			t.Fatalf("vector %d (%v): %v", i, p, err)
		}
		ref0, ref1, err := genReference(p, v.Alpha, v.Payload, block(t, v.Root0), block(t, v.Root1))
		if err != nil {
			t.Fatalf("vector %d: reference: %v", i, err)
		}
		for b, k := range []*Key{ref0, ref1} {
			raw, err := k.MarshalBinary()
			if err != nil || hex.EncodeToString(raw) != []string{v.Key0, v.Key1}[b] {
				t.Fatalf("vector %d key%d: the reference generator differs from LLAMA (%v)", i, b, err)
			}
		}
		var parsed [2]*Key
		for b, pair := range []struct {
			got  []byte
			want string
		}{{k0, v.Key0}, {k1, v.Key1}} {
			if got := hex.EncodeToString(pair.got); got != pair.want {
				t.Fatalf("vector %d (%v) key%d:\n got %s\nwant %s", i, p, b, got, pair.want)
			}
			if len(pair.got) != p.KeySize() {
				t.Fatalf("vector %d: KeySize %d, file %d", i, p.KeySize(), len(pair.got))
			}
			k, err := Parse(p, pair.got)
			if err != nil {
				t.Fatalf("vector %d key%d: parse: %v", i, b, err)
			}
			again, err := k.MarshalBinary()
			if err != nil || !bytes.Equal(again, pair.got) {
				t.Fatalf("vector %d key%d: parse/marshal round trip differs (%v)", i, b, err)
			}
			parsed[b] = k
		}
		m := mask(p.OutBits)
		for _, e := range v.Evals {
			y0, err0 := Eval(0, parsed[0], e.X)
			y1, err1 := Eval(1, parsed[1], e.X)
			if err0 != nil || err1 != nil {
				t.Fatalf("vector %d x=%d: %v %v", i, e.X, err0, err1)
			}
			if !slices.Equal(y0, e.Share0) || !slices.Equal(y1, e.Share1) {
				t.Fatalf("vector %d x=%d:\n got %v %v\nwant %v %v", i, e.X, y0, y1, e.Share0, e.Share1)
			}
			for j := range y0 {
				want := uint64(0)
				if e.X < v.Alpha {
					want = v.Payload[j]
				}
				if (y0[j]+y1[j])&m != want {
					t.Fatalf("vector %d x=%d element %d: shares sum to %d, want %d", i, e.X, j, (y0[j]+y1[j])&m, want)
				}
			}
		}
	}
}

func randomRoots(r *rand.Rand) (a, b Block) {
	for i := range a {
		a[i], b[i] = byte(r.Uint32()), byte(r.Uint32())
	}
	b[0] = b[0]&^1 | (a[0]&1 ^ 1)
	return a, b
}

// TestCorrectness: for random shapes (group sizes on both sides of the
// convert switch to an AES stream), payloads and roots, the two parties'
// shares sum to β·[x < α] at the boundaries α−1, α, α+1, 0, 2^Bin−1 and at
// random points.
func TestCorrectness(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 23))
	trials := 300
	if testing.Short() {
		trials = 60
	}
	for trial := 0; trial < trials; trial++ {
		p := Params{InBits: 1 + r.IntN(64), OutBits: 1 + r.IntN(64), Group: 1 + r.IntN(20)}
		if trial < 128 {
			p.InBits, p.OutBits = 1+trial%64, 1+(trial*7)%64 // every width once on each side
		}
		in, out := mask(p.InBits), mask(p.OutBits)
		alpha := r.Uint64() & in
		beta := make([]uint64, p.Group)
		for j := range beta {
			beta[j] = r.Uint64() & out
		}
		r0, r1 := randomRoots(r)
		if trial%2 == 1 {
			r0, r1 = r1, r0 // the root with t = 1 goes to either party
		}
		k0, k1, err := GenKeys(p, alpha, beta, r0, r1)
		if err != nil {
			t.Fatalf("%v: %v", p, err)
		}
		xs := []uint64{0, in, alpha, (alpha - 1) & in, (alpha + 1) & in}
		for j := 0; j < 8; j++ {
			xs = append(xs, r.Uint64()&in)
		}
		for _, x := range xs {
			y0, err0 := Eval(0, k0, x)
			y1, err1 := Eval(1, k1, x)
			if err0 != nil || err1 != nil {
				t.Fatal(err0, err1)
			}
			for j := range beta {
				want := uint64(0)
				if x < alpha {
					want = beta[j]
				}
				if got := (y0[j] + y1[j]) & out; got != want {
					t.Fatalf("%v α=%d x=%d element %d: got %d want %d", p, alpha, x, j, got, want)
				}
			}
		}
	}
}

// TestExhaustiveSmall checks every (α, x) for a few small shapes, so the
// strict comparison and the ends of the domain are covered completely.
func TestExhaustiveSmall(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 23))
	for _, p := range []Params{{1, 1, 1}, {3, 2, 1}, {4, 8, 2}, {5, 13, 3}, {6, 64, 3}} {
		n := uint64(1) << uint(p.InBits)
		for alpha := uint64(0); alpha < n; alpha++ {
			beta := make([]uint64, p.Group)
			for j := range beta {
				beta[j] = r.Uint64() & mask(p.OutBits)
			}
			r0, r1 := randomRoots(r)
			k0, k1, err := GenKeys(p, alpha, beta, r0, r1)
			if err != nil {
				t.Fatal(err)
			}
			for x := uint64(0); x < n; x++ {
				y0, _ := Eval(0, k0, x)
				y1, _ := Eval(1, k1, x)
				for j := range beta {
					want := uint64(0)
					if x < alpha {
						want = beta[j]
					}
					if (y0[j]+y1[j])&mask(p.OutBits) != want {
						t.Fatalf("%v α=%d x=%d element %d wrong", p, alpha, x, j)
					}
				}
			}
		}
	}
}

// TestBadInput: every rejected input gets its own error.
func TestBadInput(t *testing.T) {
	var r0, r1 Block
	r1[0] = 1
	ok := Params{InBits: 8, OutBits: 8, Group: 1}
	cases := []struct {
		name  string
		p     Params
		alpha uint64
		beta  []uint64
		r0    Block
		want  error
	}{
		{"Bin 0", Params{0, 8, 1}, 0, []uint64{1}, r0, ErrInBits},
		{"Bin 65", Params{65, 8, 1}, 0, []uint64{1}, r0, ErrInBits},
		{"Bout 0", Params{8, 0, 1}, 0, []uint64{1}, r0, ErrOutBits},
		{"Bout 65", Params{8, 65, 1}, 0, []uint64{1}, r0, ErrOutBits},
		{"group 0", Params{8, 8, 0}, 0, nil, r0, ErrGroup},
		{"wide α", ok, 256, []uint64{1}, r0, ErrAlpha},
		{"wide payload", ok, 3, []uint64{256}, r0, ErrValue},
		{"short payload", ok, 3, nil, r0, ErrPayload},
		{"equal control bits", ok, 3, []uint64{1}, r1, ErrRoots},
	}
	for _, c := range cases {
		if _, _, err := Gen(c.p, c.alpha, c.beta, c.r0, r1); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	k0, k1, err := Gen(ok, 3, []uint64{1}, r0, r1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(ok, k0[:len(k0)-1]); !errors.Is(err, ErrLength) {
		t.Errorf("short key: %v", err)
	}
	if _, err := Parse(Params{8, 4, 1}, k0); err == nil {
		// Bout 4 writes one byte per value like Bout 8: same length, but
		// this key's values use all eight bits, which Bout 4 forbids.
		// (A key whose values happen to fit would parse; that is fine.)
		t.Logf("Bout 4 accepted a Bout 8 key (its values fit in 4 bits)")
	}
	bad := bytes.Clone(k1)
	bad[len(bad)-1] = 0xff
	if _, err := Parse(Params{8, 7, 1}, bad); !errors.Is(err, ErrValue) {
		t.Errorf("value above Bout: %v", err)
	}
	if _, err := SplitKeys(ok, append(bytes.Clone(k0), k1[:5]...)); !errors.Is(err, ErrLength) {
		t.Errorf(".dat of the wrong size: %v", err)
	}
	ks, err := SplitKeys(ok, append(bytes.Clone(k0), k1...))
	if err != nil || len(ks) != 2 || ks[1].Root != r1 {
		t.Errorf("SplitKeys of two keys: %v", err)
	}
	k, _ := Parse(ok, k0)
	if _, err := Eval(2, k, 0); !errors.Is(err, ErrParty) {
		t.Errorf("party 2: %v", err)
	}
	if _, err := Eval(0, k, 256); !errors.Is(err, ErrInput) {
		t.Errorf("x = 256: %v", err)
	}
}

// FuzzParse: no byte string and shape makes Parse panic; whatever parses
// marshals back to the same bytes and evaluates without error.
func FuzzParse(f *testing.F) {
	var r0, r1 Block
	r1[0] = 1
	for _, p := range []Params{{1, 1, 1}, {8, 8, 1}, {5, 37, 3}, {4, 8, 19}} {
		beta := make([]uint64, p.Group)
		k0, _, err := Gen(p, 1, beta, r0, r1)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(p.InBits), uint8(p.OutBits), uint16(p.Group), k0)
	}
	f.Add(uint8(0), uint8(0), uint16(0), []byte{})
	f.Fuzz(func(t *testing.T, bin, bout uint8, group uint16, data []byte) {
		p := Params{InBits: int(bin), OutBits: int(bout), Group: int(group)}
		k, err := Parse(p, data)
		if err != nil {
			return
		}
		again, err := k.MarshalBinary()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("round trip: %v", err)
		}
		if _, err := Eval(0, k, 0); err != nil {
			t.Fatal(err)
		}
	})
}
