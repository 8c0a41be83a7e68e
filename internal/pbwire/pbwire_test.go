package pbwire

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func packed(xs ...uint64) []byte {
	var b []byte
	for _, x := range xs {
		b = protowire.AppendVarint(b, x)
	}
	return b
}

// TestPacked: values round-trip, 32-bit reads truncate as proto.Unmarshal
// does, appends keep what dst held, and a truncated varint is refused.
func TestPacked(t *testing.T) {
	xs := []uint64{0, 1, 127, 128, 1 << 32, 1<<64 - 1}
	v := packed(xs...)
	if got, ok := Packed64(v); !ok || !slices.Equal(got, xs) {
		t.Fatalf("Packed64: %v %v", got, ok)
	}
	want32 := []uint32{0, 1, 127, 128, 0, 1<<32 - 1}
	if got, ok := Packed32(v); !ok || !slices.Equal(got, want32) {
		t.Fatalf("Packed32: %v %v", got, ok)
	}
	if got, ok := AppendPacked64([]uint64{9}, v); !ok || !slices.Equal(got, append([]uint64{9}, xs...)) {
		t.Fatalf("AppendPacked64: %v %v", got, ok)
	}
	if got, ok := AppendPacked32([]uint32{9}, v); !ok || !slices.Equal(got, append([]uint32{9}, want32...)) {
		t.Fatalf("AppendPacked32: %v %v", got, ok)
	}
	if got, ok := Packed64(nil); !ok || got != nil {
		t.Fatalf("Packed64(empty): %v %v", got, ok)
	}
	bad := v[:len(v)-1] // the last varint cut short
	if _, ok := Packed64(bad); ok {
		t.Fatal("Packed64 accepted a truncated varint")
	}
	if _, ok := Packed32(bad); ok {
		t.Fatal("Packed32 accepted a truncated varint")
	}
}

// TestEach: fields in wire order with their values; a repeated field, a
// number out of range, a fixed-width field or a truncated one stop the walk
// with false.
func TestEach(t *testing.T) {
	field := func(b []byte, num protowire.Number, v string) []byte {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		return protowire.AppendString(b, v)
	}
	varint := func(b []byte, num protowire.Number, x uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), x)
	}
	msg := varint(field(field(nil, 2, "two"), 1, "one"), 3, 1<<40)
	var got []string
	if !Each(msg, 3, func(f Field) bool {
		if x, ok := f.Uint64(); ok {
			got = append(got, fmt.Sprintf("%d%d", f.Num, x))
			if _, ok := f.Uint32(); ok {
				t.Errorf("Uint32 took %d", x)
			}
			return true
		}
		v, ok := f.Bytes()
		if !ok || cap(v) != len(v) {
			t.Errorf("field %d: Bytes %q (cap %d), %v", f.Num, v, cap(v), ok)
		}
		got = append(got, fmt.Sprintf("%d%s", f.Num, v))
		return true
	}) || !slices.Equal(got, []string{"2two", "1one", "31099511627776"}) {
		t.Fatalf("walk: %v", got)
	}
	all := func(Field) bool { return true }
	for name, b := range map[string][]byte{
		"repeated":  field(field(nil, 1, "a"), 1, "b"),
		"too high":  field(nil, 4, "a"),
		"zero":      field(nil, 0, "a"),
		"fixed64":   protowire.AppendFixed64(protowire.AppendTag(nil, 1, protowire.Fixed64Type), 5),
		"truncated": field(nil, 1, "abc")[:4],
		"varint":    varint(nil, 1, 1<<40)[:3],
	} {
		if Each(b, 3, all) {
			t.Errorf("%s: accepted", name)
		}
	}
	if Each(msg, 3, func(Field) bool { return false }) {
		t.Error("fn's false did not stop the walk")
	}
	// Typed accessors refuse the other wire type.
	if _, ok := (Field{Typ: protowire.VarintType}).Bytes(); ok {
		t.Error("Bytes of a varint")
	}
	if _, ok := (Field{Typ: protowire.BytesType}).Uint64(); ok {
		t.Error("Uint64 of bytes")
	}
	if _, ok := (Field{Typ: protowire.VarintType}).AppendPacked64(nil); ok {
		t.Error("packed of a varint")
	}
	if x, ok := (Field{Typ: protowire.BytesType, V: []byte{1, 0x80, 1}}).Packed32(); !ok || !slices.Equal(x, []uint32{1, 128}) {
		t.Errorf("Packed32: %v %v", x, ok)
	}
}

// TestEachRepeated: the elements of one repeated field in order; any
// other field, or a truncated one, stops the walk with false.
func TestEachRepeated(t *testing.T) {
	field := func(b []byte, num protowire.Number, v string) []byte {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		return protowire.AppendString(b, v)
	}
	var got []string
	if !EachRepeated(field(field(nil, 1, "a"), 1, "b"), 1, func(v []byte) bool {
		got = append(got, string(v))
		return true
	}) || !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("walk: %v", got)
	}
	all := func([]byte) bool { return true }
	for name, b := range map[string][]byte{
		"other":     field(field(nil, 1, "a"), 2, "b"),
		"varint":    protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 5),
		"truncated": field(nil, 1, "abc")[:4],
	} {
		if EachRepeated(b, 1, all) {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestPackedLikeProtowire: random packed bodies, valid or cut, overlong or
// not, decode as a ConsumeVarint loop decodes them.
func TestPackedLikeProtowire(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var v []byte
		for range r.IntN(40) {
			x := r.Uint64() >> uint(r.IntN(64))
			v = protowire.AppendVarint(v, x)
		}
		switch r.IntN(4) {
		case 0:
			if len(v) > 0 {
				v = v[:r.IntN(len(v))]
			}
		case 1:
			if len(v) > 0 {
				v[r.IntN(len(v))] = byte(r.Uint32())
			}
		case 2:
			v = append(v, bytes.Repeat([]byte{0xff}, r.IntN(12))...)
			v = append(v, byte(r.IntN(3)))
		}
		var want []uint64
		wantOK := true
		for w := v; len(w) > 0; {
			x, n := protowire.ConsumeVarint(w)
			if n < 0 {
				wantOK = false
				break
			}
			want = append(want, x)
			w = w[n:]
		}
		got, ok := AppendPacked64([]uint64{7}, v)
		if ok != wantOK || wantOK && !slices.Equal(got[1:], want) || got[0] != 7 {
			t.Fatalf("% x: got %v %v, want %v %v", v, got, ok, want, wantOK)
		}
		got32, ok := AppendPacked32(nil, v)
		if ok != wantOK {
			t.Fatalf("% x: 32: %v, want %v", v, ok, wantOK)
		}
		for i := range got32 {
			if wantOK && got32[i] != uint32(want[i]) {
				t.Fatalf("% x: 32: %v, want %v", v, got32, want)
			}
		}
	}
}

// BenchmarkAppendPacked64 reads a packed body like a derived bulk's
// lists: 1024 counters (2-3 bytes each) and 1024 32-bit shares (mostly 5).
func BenchmarkAppendPacked64(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	var v []byte
	for i := range 1024 {
		v = protowire.AppendVarint(v, uint64(1000+i))
		v = protowire.AppendVarint(v, uint64(r.Uint32()))
	}
	dst := make([]uint64, 0, 2048)
	for b.Loop() {
		dst, _ = AppendPacked64(dst[:0], v)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2048, "ns/varint")
}
