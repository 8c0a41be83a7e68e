// Package pbwire reads packed repeated protobuf fields straight from wire
// bytes, for the hot paths that decode messages in place instead of
// through proto.Unmarshal.
package pbwire

import (
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// varints counts the varints of a packed field (the bytes that end one).
func varints(v []byte) int {
	n := 0
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
	dst = slices.Grow(dst, varints(v))
	for len(v) > 0 {
		x, n := protowire.ConsumeVarint(v)
		if n < 0 {
			return dst, false
		}
		dst = append(dst, T(x))
		v = v[n:]
	}
	return dst, true
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

// EachBytesField walks a message body whose fields are all length-delimited,
// numbered 1..maxNum (maxNum < 64) and each present at most once, calling
// fn with every field's number and bytes (a slice of b) in wire order. It
// returns false, stopping early, on anything else or when fn returns false.
func EachBytesField(b []byte, maxNum protowire.Number, fn func(num protowire.Number, v []byte) bool) bool {
	var seen uint64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType || num < 1 || num > maxNum || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		b = b[n:]
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if !fn(num, v) {
			return false
		}
	}
	return true
}
