package ntru

import "testing"

// TestPackBitsRoundTrip checks packBits/unpackBits against a bit-by-bit
// model for every width used (2…16 bits) and lengths around the 32-bit
// refill, and that unpackBits rejects nonzero padding and extra bytes.
func TestPackBitsRoundTrip(t *testing.T) {
	r := detRand(41)
	for bits := uint(2); bits <= 16; bits++ {
		for n := 0; n <= 41; n++ {
			v := make([]uint16, n)
			for i := range v {
				v[i] = uint16(r.Uint64()) & (1<<bits - 1)
			}
			size := (n*int(bits) + 7) / 8
			dst := make([]byte, size)
			packBits(dst, v, bits)
			want := make([]byte, size) // MSB-first model
			for i, x := range v {
				for b := uint(0); b < bits; b++ {
					if x>>(bits-1-b)&1 == 1 {
						pos := i*int(bits) + int(b)
						want[pos/8] |= 0x80 >> (pos % 8)
					}
				}
			}
			if string(dst) != string(want) {
				t.Fatalf("bits=%d n=%d: packed %x, want %x", bits, n, dst, want)
			}
			got := make([]uint16, n)
			if !unpackBits(got, dst, bits) {
				t.Fatalf("bits=%d n=%d: valid packing rejected", bits, n)
			}
			for i := range v {
				if got[i] != v[i] {
					t.Fatalf("bits=%d n=%d: value %d = %d, want %d", bits, n, i, got[i], v[i])
				}
			}
			if pad := size*8 - n*int(bits); pad > 0 {
				bad := append([]byte{}, dst...)
				bad[size-1] |= 1
				if unpackBits(got, bad, bits) {
					t.Fatalf("bits=%d n=%d: nonzero padding accepted", bits, n)
				}
			}
			if unpackBits(got, append(append([]byte{}, dst...), 0, 0, 0), bits) {
				t.Fatalf("bits=%d n=%d: three extra zero bytes accepted", bits, n)
			}
		}
	}
}
