package prg

import (
	"crypto/aes"
	"crypto/rand"
	"encoding/hex"
	"testing"
)

// FIPS-197 Appendix A.1 key expansion and Appendix B cipher example.
func TestExpandKeyFIPS197(t *testing.T) {
	var k [16]byte
	hex.Decode(k[:], []byte("2b7e151628aed2a6abf7158809cf4f3c"))
	s := ExpandKey(k)
	if got := hex.EncodeToString(s[10][:]); got != "d014f9a8c9ee2589e13f0cc8b6630ca6" {
		t.Fatalf("round key 10 = %s", got)
	}
	if got := hex.EncodeToString(s[1][:]); got != "a0fafe1788542cb123a339392a6c7605" {
		t.Fatalf("round key 1 = %s", got)
	}
}

func TestSboxKnownEntries(t *testing.T) {
	for in, want := range map[byte]byte{0x00: 0x63, 0x01: 0x7c, 0x53: 0xed, 0xff: 0x16, 0x10: 0xca} {
		if sbox[in] != want {
			t.Errorf("sbox[%#x] = %#x, want %#x", in, sbox[in], want)
		}
	}
}

func TestLaneKeysFromLabels(t *testing.T) {
	// The lane key is the first half of SHA-256 of the label.
	want := map[Lane]string{}
	for l := Lane(0); l < numLanes; l++ {
		want[l] = hex.EncodeToString(laneRaw[l][:])
		if len(want[l]) != 32 {
			t.Fatal("bad key length")
		}
	}
	if want[SeedLeft] == want[SeedRight] || want[ValueLeft] == want[ValueRight] {
		t.Fatal("lanes share a key")
	}
}

// reference computes MMO with crypto/aes directly, independent of any kernel.
func reference(l Lane, in Block) Block {
	k := LaneKey(l)
	c, _ := aes.NewCipher(k[:])
	var out Block
	c.Encrypt(out[:], in[:])
	for i := range out {
		out[i] ^= in[i]
	}
	return out
}

// TestKernelsAgree checks every registered kernel against crypto/aes on
// random inputs of every length up to 300 (covering all unrolled tails),
// for both two-lane and one-lane calls, with and without aliasing.
func TestKernelsAgree(t *testing.T) {
	EachKernel(func(name string) {
		for n := 0; n <= 300; n += 1 + n/16 {
			in := make([]Block, n)
			for i := range in {
				rand.Read(in[i][:])
			}
			l, r := make([]Block, n), make([]Block, n)
			ExpandSeeds(l, r, in)
			vl, vr := make([]Block, n), make([]Block, n)
			ExpandValues(vl, vr, in)
			one := make([]Block, n)
			Hash(ValueRight, one, in)
			for i := range in {
				if l[i] != reference(SeedLeft, in[i]) || r[i] != reference(SeedRight, in[i]) {
					t.Fatalf("%s: seed lanes wrong at n=%d i=%d", name, n, i)
				}
				if vl[i] != reference(ValueLeft, in[i]) || vr[i] != reference(ValueRight, in[i]) {
					t.Fatalf("%s: value lanes wrong at n=%d i=%d", name, n, i)
				}
				if one[i] != vr[i] {
					t.Fatalf("%s: Hash differs from ExpandValues at n=%d i=%d", name, n, i)
				}
			}
			// In place: left output over the input.
			cp := append([]Block(nil), in...)
			rr := make([]Block, n)
			ExpandSeeds(cp, rr, cp)
			for i := range in {
				if cp[i] != l[i] || rr[i] != r[i] {
					t.Fatalf("%s: aliased call wrong at n=%d i=%d", name, n, i)
				}
			}
		}
	})
}

func TestSplitControlAndConvert(t *testing.T) {
	var b Block
	for i := range b {
		b[i] = byte(0xf1 + i)
	}
	if SplitControl(&b) != 1 || b[0] != 0xf0 {
		t.Fatal("SplitControl")
	}
	want := uint64(0)
	for i := 15; i >= 8; i-- {
		want = want<<8 | uint64(b[i])
	}
	if Convert(&b, 64) != want || Convert(&b, 7) != want&127 || Convert(&b, 1) != want&1 {
		t.Fatal("Convert")
	}
}

func BenchmarkExpandSeeds(b *testing.B) {
	EachKernel(func(name string) {
		b.Run(name, func(b *testing.B) {
			in := make([]Block, 1024)
			l, r := make([]Block, 1024), make([]Block, 1024)
			b.SetBytes(2 * 16 * 1024)
			for b.Loop() {
				ExpandSeeds(l, r, in)
			}
			b.ReportMetric(float64(2*1024*b.N)/b.Elapsed().Seconds(), "blocks/s")
		})
	})
}
