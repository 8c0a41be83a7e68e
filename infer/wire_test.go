package infer

import (
	"errors"
	"testing"

	"github.com/kord-fss/kord/gates"
)

// TestMaterialWire: the dealer's encoding of both parties' session and
// material parses back to material that evaluates bit-exact; every
// truncation of an encoding and a bad tag are refused with
// ErrMaterialFormat, never a panic.
func TestMaterialWire(t *testing.T) {
	set := testSet(t)
	m := loadModel(t, "mlp")
	sess, mat := dealerGen(t, m.Arch())
	var got [2]*Material
	var gs [2]*Session
	var raw0 []byte
	for b := 0; b < 2; b++ {
		raw, err := mat[b].MarshalBinary(m.Ring)
		if err != nil {
			t.Fatal(err)
		}
		if b == 0 {
			raw0 = append([]byte(nil), raw...)
		}
		if got[b], err = ParseMaterial(raw); err != nil {
			t.Fatal(err)
		}
		rs, err := sess[b].MarshalBinary(m.Ring)
		if err != nil {
			t.Fatal(err)
		}
		if gs[b], err = ParseSession(rs); err != nil {
			t.Fatal(err)
		}
	}
	c0, c1 := connPair(t)
	x := QuantizeImage(set.Images[0], m.Frac)
	want, _, err := m.Ref(x)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Online([2]*gates.Conn{c0, c1}, m, gs, got, x)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if out[i] != want[i] {
			t.Fatalf("logit %d: %d, want %d", i, out[i], want[i])
		}
	}
	for cut := 0; cut < len(raw0); cut += 1 + cut/3 {
		if _, err := ParseMaterial(raw0[:cut]); !errors.Is(err, ErrMaterialFormat) {
			t.Fatalf("cut at %d: %v", cut, err)
		}
	}
	bad := append([]byte(nil), raw0...)
	bad[len(materialMagic)+2] = 9 // the first layer's tag
	if _, err := ParseMaterial(bad); !errors.Is(err, ErrMaterialFormat) {
		t.Fatalf("bad tag: %v", err)
	}
	if _, err := ParseMaterial(append(raw0, 0)); !errors.Is(err, ErrMaterialFormat) {
		t.Fatalf("trailing byte: %v", err)
	}
	if _, err := ParseSession([]byte("KSES1\n\x00\x05")); !errors.Is(err, ErrMaterialFormat) {
		t.Fatalf("short session: %v", err)
	}
}

// FuzzParseMaterial: ParseMaterial and ParseSession never panic, and
// every error wraps ErrMaterialFormat.
func FuzzParseMaterial(f *testing.F) {
	arch := &Model{Name: "f", Ring: 16, Frac: 4, Input: Shape{C: 1, H: 1, W: 4},
		Layers: []Layer{{Kind: FC, In: 4, Out: 3}, {Kind: ReLU}, {Kind: Trunc, S: 4}}}
	sess, mat := dealerGen(f, arch)
	for b := 0; b < 2; b++ {
		raw, err := mat[b].MarshalBinary(arch.Ring)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
		rs, err := sess[b].MarshalBinary(arch.Ring)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(rs)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := ParseMaterial(data); err != nil && !errors.Is(err, ErrMaterialFormat) {
			t.Fatalf("error not wrapped: %v", err)
		}
		if _, err := ParseSession(data); err != nil && !errors.Is(err, ErrMaterialFormat) {
			t.Fatalf("error not wrapped: %v", err)
		}
	})
}
