package pbwire

import (
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

// TestEachBytesField: fields in wire order; a repeated field, a number out
// of range, a non-bytes field or a truncated one stop the walk with false.
func TestEachBytesField(t *testing.T) {
	field := func(b []byte, num protowire.Number, v string) []byte {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		return protowire.AppendString(b, v)
	}
	msg := field(field(nil, 2, "two"), 1, "one")
	var got []string
	if !EachBytesField(msg, 3, func(num protowire.Number, v []byte) bool {
		got = append(got, string(rune('0'+num))+string(v))
		return true
	}) || !slices.Equal(got, []string{"2two", "1one"}) {
		t.Fatalf("walk: %v", got)
	}
	all := func(protowire.Number, []byte) bool { return true }
	for name, b := range map[string][]byte{
		"repeated":  field(field(nil, 1, "a"), 1, "b"),
		"too high":  field(nil, 4, "a"),
		"zero":      field(nil, 0, "a"),
		"varint":    protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 5),
		"truncated": field(nil, 1, "abc")[:4],
	} {
		if EachBytesField(b, 3, all) {
			t.Errorf("%s: accepted", name)
		}
	}
	if EachBytesField(msg, 3, func(protowire.Number, []byte) bool { return false }) {
		t.Error("fn's false did not stop the walk")
	}
}
