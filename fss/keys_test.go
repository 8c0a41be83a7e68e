package fss

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/kord-fss/kord/internal/prg"
)

// keysImage returns n serialized keys of shape p, one party's, back to back.
func keysImage(t testing.TB, r *rand.Rand, p Params, n int) []byte {
	var img []byte
	for range n {
		var r0, r1 prg.Block
		r0[0], r1[1] = byte(r.Uint32()), byte(r.Uint32())
		k0, k1, err := GenWithRoots(p, r.Uint64()&prg.Mask(p.InBits), r.Uint64()&prg.Mask(p.OutBits), r0, r1)
		if err != nil {
			t.Fatal(err)
		}
		k := k0
		if r.IntN(2) == 1 {
			k = k1
		}
		if img, err = k.AppendBinary(img); err != nil {
			t.Fatal(err)
		}
	}
	return img
}

// TestParseKeysMatchesParseKey pins ParseKeys to ParseKey: the same keys
// from well-formed images, and on a corrupted image an error exactly when
// ParseKey refuses one of the keys, wrapping ParseKey's error for the first.
func TestParseKeysMatchesParseKey(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, p := range []Params{{DPF, 1, 1}, {DPF, 32, 32}, {DCF, 17, 5}, {DCF, 64, 64}, {DPF, 9, 64}} {
		const n = 9
		img := keysImage(t, r, p, n)
		ks := p.KeySize()
		got, err := ParseKeys(img, ks, n)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			want, err := ParseKey(img[i*ks : (i+1)*ks])
			if err != nil || !got[i].Equal(want) {
				t.Fatalf("%v key %d: ParseKeys differs from ParseKey (%v)", p, i, err)
			}
		}
		got[3].Wipe()
		if w, _ := ParseKey(img[4*ks : 5*ks]); !got[4].Equal(w) {
			t.Fatal("wiping one key touched its neighbour")
		}
		for trial := range 300 {
			bad := append([]byte(nil), img...)
			for range 1 + trial%3 {
				bad[r.IntN(len(bad))] ^= byte(1 << r.IntN(8))
			}
			var first error
			for i := range n {
				if _, err := ParseKey(bad[i*ks : (i+1)*ks]); err != nil {
					first = err
					break
				}
			}
			_, err := ParseKeys(bad, ks, n)
			switch {
			case first == nil && err != nil:
				// A key of another (valid) shape: only ParseKeys refuses it.
				if !errors.Is(err, ErrLength) {
					t.Fatalf("%v: ParseKeys refused a good image: %v", p, err)
				}
			case first != nil && err == nil:
				t.Fatalf("%v: ParseKeys accepted what ParseKey refuses (%v)", p, first)
			case first != nil && !errors.Is(err, unwrapSentinel(first)):
				t.Fatalf("%v: ParseKeys error %v, ParseKey %v", p, err, first)
			}
		}
	}
	for _, c := range []struct{ len, stride, n int }{{10, 0, 1}, {10, 5, 1}, {11, 11, 2}, {12, 4, 3}} {
		if _, err := ParseKeys(make([]byte, c.len), c.stride, c.n); err == nil {
			t.Fatalf("%+v accepted", c)
		}
	}
}

// unwrapSentinel returns the package sentinel an UnmarshalBinary error wraps.
func unwrapSentinel(err error) error {
	for _, s := range []error{ErrMagic, ErrVersion, ErrType, ErrParty, ErrInBits, ErrOutBits, ErrLength, ErrValueBits, ErrControlBits} {
		if errors.Is(err, s) {
			return s
		}
	}
	return err
}

// FuzzParseKeys: on any bytes, ParseKeys never panics, and what it
// accepts ParseKey accepts key by key, as equal keys.
func FuzzParseKeys(f *testing.F) {
	r := rand.New(rand.NewPCG(23, 24))
	p := Params{DCF, 6, 7}
	f.Add(keysImage(f, r, p, 3), uint16(p.KeySize()), uint8(3))
	f.Add(keysImage(f, r, Params{DPF, 4, 4}, 2), uint16(Params{DPF, 4, 4}.KeySize()), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, stride uint16, n uint8) {
		ks, err := ParseKeys(data, int(stride), int(n))
		if err != nil {
			return
		}
		for i, k := range ks {
			want, err := ParseKey(data[i*int(stride) : (i+1)*int(stride)])
			if err != nil || !k.Equal(want) {
				t.Fatalf("key %d: accepted by ParseKeys, ParseKey says %v", i, err)
			}
		}
	})
}
