package llamaexport

import (
	"bytes"
	"testing"
)

// FuzzParseShares: any bytes give n shares below 2^inBits or an error,
// never a panic.
func FuzzParseShares(f *testing.F) {
	f.Add([]byte("1\n2\n3\n"), uint8(8), uint8(3))
	f.Add([]byte("18446744073709551615\n"), uint8(64), uint8(1))
	f.Add([]byte("-1\n"), uint8(8), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, inBits, n uint8) {
		bits := int(inBits%64) + 1
		out, err := parseShares("f", bytes.NewReader(data), bits, int(n))
		if err != nil {
			return
		}
		if len(out) != int(n) {
			t.Fatalf("%d shares, want %d", len(out), n)
		}
		for _, v := range out {
			if bits < 64 && v>>uint(bits) != 0 {
				t.Fatalf("share %d wider than %d bits", v, bits)
			}
		}
	})
}
