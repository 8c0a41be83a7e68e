// Package pbwire reads packed repeated protobuf fields straight from wire
// bytes, for the hot paths that decode messages in place instead of
// through proto.Unmarshal.
package pbwire

import (
	"encoding/binary"
	"math/bits"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// varints counts the varints of a packed field (the bytes that end one),
// eight bytes at a time.
func varints(v []byte) int {
	n := 0
	for len(v) >= 8 {
		n += 8 - bits.OnesCount64(binary.LittleEndian.Uint64(v)&0x8080808080808080)
		v = v[8:]
	}
	for _, c := range v {
		if c < 0x80 {
			n++
		}
	}
	return n
}

// Packed64 reads the body of a packed repeated uint64 field; ok is false
// on a truncated or overlong varint.
func Packed64(v []byte) (out []uint64, ok bool) {
	if len(v) == 0 {
		return nil, true
	}
	if out, ok = AppendPacked64(nil, v); !ok {
		return nil, false
	}
	return out, true
}

// AppendPacked64 is Packed64 appending to dst (whose capacity it reuses).
func AppendPacked64(dst []uint64, v []byte) (out []uint64, ok bool) { return appendPacked(dst, v) }

// AppendPacked32 is Packed32 appending to dst (whose capacity it reuses).
func AppendPacked32(dst []uint32, v []byte) (out []uint32, ok bool) { return appendPacked(dst, v) }

// appendPacked appends the varints of a packed field to dst, each
// truncated to T as proto.Unmarshal does.
func appendPacked[T uint32 | uint64](dst []T, v []byte) ([]T, bool) {
	k := varints(v)
	dst = slices.Grow(dst, k)
	// Every varint but a truncated last one ends in a byte varints
	// counted, so the k slots hold them all; they are written by index.
	out := dst[len(dst) : len(dst)+k]
	i := 0
	for len(v) > 0 {
		var x uint64
		n := 1
		if c := v[0]; c < 0x80 {
			x = uint64(c)
		} else if x, n = protowire.ConsumeVarint(v); n < 0 {
			return dst[:len(dst)+i], false
		}
		if i == len(out) {
			return dst[:len(dst)+i], false // never: see above
		}
		out[i] = T(x)
		i++
		v = v[n:]
	}
	return dst[:len(dst)+i], true
}

// Packed32 reads the body of a packed repeated uint32 field, truncating
// each value to 32 bits as proto.Unmarshal does.
func Packed32(v []byte) (out []uint32, ok bool) {
	if len(v) == 0 {
		return nil, true
	}
	if out, ok = AppendPacked32(nil, v); !ok {
		return nil, false
	}
	return out, true
}

// Field is one field of a message body as Each hands it over: its number
// and wire type, and its value, X for a varint and V (a slice of the body)
// for a length-delimited field.
type Field struct {
	Num protowire.Number
	Typ protowire.Type
	X   uint64
	V   []byte
}

// Uint64 is the field's varint; ok is false for another wire type.
func (f Field) Uint64() (x uint64, ok bool) { return f.X, f.Typ == protowire.VarintType }

// Uint32 is the field's varint when it fits 32 bits; ok is false for a
// larger value (which the fast paths leave to proto.Unmarshal) or another
// wire type.
func (f Field) Uint32() (x uint32, ok bool) {
	return uint32(f.X), f.Typ == protowire.VarintType && f.X <= 1<<32-1
}

// Bytes is the field's bytes, a slice of the body capped at its length so
// that appending to it cannot overwrite what follows; ok is false for
// another wire type.
func (f Field) Bytes() (v []byte, ok bool) {
	return f.V[:len(f.V):len(f.V)], f.Typ == protowire.BytesType
}

// AppendPacked64 reads the field as a packed repeated uint64, appending
// to dst; ok is false for another wire type or a bad varint.
func (f Field) AppendPacked64(dst []uint64) (out []uint64, ok bool) {
	if f.Typ != protowire.BytesType {
		return dst, false
	}
	return appendPacked(dst, f.V)
}

// AppendPacked32 is AppendPacked64 for a packed repeated uint32.
func (f Field) AppendPacked32(dst []uint32) (out []uint32, ok bool) {
	if f.Typ != protowire.BytesType {
		return dst, false
	}
	return appendPacked(dst, f.V)
}

// Packed64 is AppendPacked64 to a fresh list (nil for an empty field).
func (f Field) Packed64() (out []uint64, ok bool) {
	if f.Typ != protowire.BytesType {
		return nil, false
	}
	return Packed64(f.V)
}

// Packed32 is Packed64 for a packed repeated uint32.
func (f Field) Packed32() (out []uint32, ok bool) {
	if f.Typ != protowire.BytesType {
		return nil, false
	}
	return Packed32(f.V)
}

// Each walks a message body whose fields are varints or length-delimited,
// numbered 1..maxNum (maxNum < 64) and each present at most once, calling
// fn with every field in wire order. It returns false, stopping early, on
// anything else or when fn returns false; the fast decoders then leave the
// message to proto.Unmarshal.
func Each(b []byte, maxNum protowire.Number, fn func(f Field) bool) bool {
	return walk(b, maxNum, true, fn)
}

// EachRepeated walks a message body that holds only the repeated
// length-delimited field num, calling fn with each element (a slice of the
// body) in wire order; it returns false, stopping early, on anything else
// or when fn returns false.
func EachRepeated(b []byte, num protowire.Number, fn func(v []byte) bool) bool {
	return walk(b, num, false, func(f Field) bool {
		return f.Num == num && f.Typ == protowire.BytesType && fn(f.V)
	})
}

// walk is Each, with fields allowed more than once unless once.
func walk(b []byte, maxNum protowire.Number, once bool, fn func(f Field) bool) bool {
	var seen uint64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num < 1 || num > maxNum || once && seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		b = b[n:]
		f := Field{Num: num, Typ: typ}
		switch typ {
		case protowire.VarintType:
			f.X, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			f.V, n = protowire.ConsumeBytes(b)
		default:
			return false
		}
		if n < 0 {
			return false
		}
		b = b[n:]
		if !fn(f) {
			return false
		}
	}
	return true
}
