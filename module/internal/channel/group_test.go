package channel

import (
	"bytes"
	"slices"
	"testing"

	"github.com/kord-fss/kord/internal/prg"
)

// TestGroupFrames: a payload vector's frames carry every element on each
// tier and open to the sender's shares; one element (Group 0 or 1) gives
// exactly the frames and associated data of a plain Desc; the associated
// data binds the group size, so a frame sealed for one group does not
// open as another's even where the lengths agree.
func TestGroupFrames(t *testing.T) {
	c0, c1 := pairOfChannels(t)
	for _, d := range []Desc{{1, 0x12, 16, 16, 2}, {1, 0x12, 64, 64, 19}, {1, 0x12, 7, 3, 5}, {1, 0x12, 1, 1, 64}} {
		g := d.Group
		if d.Size() != width(d.InBits)+g*width(d.OutBits) {
			t.Fatalf("%+v: size %d", d, d.Size())
		}
		n := 3
		a, b := make([]uint64, n), make([]uint64, n*g)
		for i := range a {
			a[i] = uint64(0x9e3779b97f4a7c15*uint64(i+1)) & prg.Mask(d.InBits)
		}
		for i := range b {
			b[i] = uint64(0xc2b2ae3d27d4eb4f*uint64(i+7)) & prg.Mask(d.OutBits)
		}
		// keystream tier
		f := c0.SealKeystreamBulk(nil, 100, d, a, b)
		if len(f) != n*d.Size() {
			t.Fatalf("%+v: keystream frame %d bytes, want %d", d, len(f), n*d.Size())
		}
		ga, gb := make([]uint64, n), make([]uint64, n*g)
		if err := c1.OpenKeystreamBulk(100, d, f, ga, gb); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ga, a) || !slices.Equal(gb, b) {
			t.Fatalf("%+v: keystream frame opened to other shares", d)
		}
		// mac tier: one envelope over the packed vectors
		var plain []byte
		for i := range a {
			plain = PackVec(plain, d, a[i], b[i*g:(i+1)*g])
		}
		ds := []Desc{d, d, d}
		env, err := c0.Seal(TierBatchMAC, 7, ds, plain)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c1.Open(TierBatchMAC, 7, ds, env)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("%+v: batchmac envelope did not open to its plaintext: %v", d, err)
		}
		for i := range a {
			x, err := UnpackVec(got[i*d.Size():(i+1)*d.Size()], d, gb[i*g:(i+1)*g])
			if err != nil || x != a[i] {
				t.Fatalf("%+v: UnpackVec: %v", d, err)
			}
		}
		if !slices.Equal(gb, b) {
			t.Fatalf("%+v: UnpackVec read other elements", d)
		}
	}
	// Group binds the associated data: a two-element frame of 8-bit
	// payloads has the plaintext length of a one-element 16-bit one.
	two, one := Desc{1, 0x12, 8, 8, 2}, Desc{1, 0x12, 8, 16, 0}
	if two.Size() != one.Size() {
		t.Fatal("test shapes should have equal sizes")
	}
	env, err := c0.Seal(TierMAC, 9, []Desc{two}, make([]byte, two.Size()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Open(TierMAC, 9, []Desc{one}, env); err != ErrAuth {
		t.Fatalf("a group-2 frame opened as a group-1 frame of equal length: %v", err)
	}
	if _, err := c1.Open(TierMAC, 9, []Desc{{1, 0x12, 8, 8, 3}}, env); err == nil {
		t.Fatal("a group-2 frame opened as group 3")
	}
	// One element: Group 0 and 1 are the plain frame, byte for byte.
	for _, g := range []int{0, 1} {
		d := Desc{1, 0x12, 16, 16, g}
		if !bytes.Equal(AD(TierMAC, 0, 5, []Desc{d}), AD(TierMAC, 0, 5, []Desc{{1, 0x12, 16, 16, 0}})) {
			t.Fatalf("group %d changed the associated data", g)
		}
		if !bytes.Equal(PackVec(nil, d, 3, []uint64{4}), Pack(nil, d, 3, 4)) {
			t.Fatalf("group %d changed the packed shares", g)
		}
	}
	// A packed element wider than Bout is a range error.
	bad := PackVec(nil, Desc{1, 0x12, 8, 16, 2}, 1, []uint64{2, 0xffff})
	if _, err := UnpackVec(bad, Desc{1, 0x12, 8, 12, 2}, make([]uint64, 2)); err != ErrRange {
		t.Fatalf("an element over Bout unpacked: %v", err)
	}
}

// FuzzUnpackVec: any bytes either unpack to in-range shares that pack
// back to the same bytes, or give ErrLength / ErrRange; never a panic.
func FuzzUnpackVec(f *testing.F) {
	f.Add([]byte{1, 2, 3}, uint8(8), uint8(8), uint8(2))
	f.Add(make([]byte, 8+19*8), uint8(64), uint8(64), uint8(19))
	f.Fuzz(func(t *testing.T, src []byte, in, out, g uint8) {
		d := Desc{Mode: 1, Type: 0x12, InBits: int(in%64) + 1, OutBits: int(out%64) + 1, Group: int(g%65) + 1}
		bs := make([]uint64, d.g())
		a, err := UnpackVec(src, d, bs)
		if err != nil {
			if err != ErrLength && err != ErrRange {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if a&^prg.Mask(d.InBits) != 0 {
			t.Fatal("α share out of range")
		}
		for _, b := range bs {
			if b&^prg.Mask(d.OutBits) != 0 {
				t.Fatal("β element out of range")
			}
		}
		if back := PackVec(nil, d, a, bs); !bytes.Equal(back, src) {
			t.Fatalf("repacked %x, unpacked from %x", back, src)
		}
	})
}
