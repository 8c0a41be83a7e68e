package ntru

import (
	"crypto/rand"
	"fmt"
	"testing"
)

func BenchmarkKeyGen(b *testing.B) {
	for _, set := range ParamSets() {
		b.Run(set.Name(), func(b *testing.B) {
			cpuLoop(b, func() {
				if _, err := GenerateKey(rand.Reader, set); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

func benchKey(b *testing.B, set ParamSet) (*PrivateKey, []byte, []byte) {
	key, err := GenerateKey(detRand(9), set)
	if err != nil {
		b.Fatal(err)
	}
	msg := make([]byte, 32) // a KEM secret
	ct, err := key.Public().Encrypt(rand.Reader, msg)
	if err != nil {
		b.Fatal(err)
	}
	return key, msg, ct
}

func BenchmarkEncrypt(b *testing.B) {
	for _, set := range ParamSets() {
		b.Run(set.Name(), func(b *testing.B) {
			key, msg, _ := benchKey(b, set)
			pub := key.Public()
			r := detRand(10)
			cpuLoop(b, func() {
				if _, err := pub.Encrypt(r, msg); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

func BenchmarkDecrypt(b *testing.B) {
	for _, set := range ParamSets() {
		b.Run(set.Name(), func(b *testing.B) {
			key, _, ct := benchKey(b, set)
			cpuLoop(b, func() {
				if _, err := key.Decrypt(ct); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkMul measures the products alone: the sparse r·h of encryption
// ("sparse"), the constant-time Kronecker product of decryption ("kron",
// with packing t as decryption does for r) and the previous constant-time
// dense masked product ("ct").
func BenchmarkMul(b *testing.B) {
	for _, set := range ParamSets() {
		p, _ := set.params()
		r := detRand(11)
		a := randomPoly(r, p.n)
		plus, minus, _ := randomTernary(r, p.n, p.dr, p.dr)
		tr := make([]uint8, p.n)
		for _, i := range plus {
			tr[i] = 1
		}
		for _, i := range minus {
			tr[i] = 2
		}
		ext, neg := newLaneImage(a, false), newLaneImage(a, true)
		c := make([]uint16, p.n)
		b.Run("sparse/"+set.Name(), func(b *testing.B) {
			cpuLoop(b, func() { sparseMul(c, ext, neg, plus, minus) })
		})
		m := kronWords(p.n)
		aw, tw, prod := make([]uint64, m), make([]uint64, m), make([]uint64, kronScratchWords(m))
		packKron(aw, a)
		aSum := sumMod(a)
		b.Run("kron/"+set.Name(), func(b *testing.B) {
			cpuLoop(b, func() {
				packKronTernary(tw, tr)
				ternaryMulKron(c, aw, aSum, tw, prod)
			})
		})
		// The Karatsuba depths around the chosen one (kronPlan), each with
		// its own padding to a multiple of 2^depth words.
		for depth := 3; depth <= 6; depth++ {
			w := (p.n + 3) / 4
			md := (w + 1<<depth - 1) >> depth << depth
			aw, tw, prod := make([]uint64, md), make([]uint64, md), make([]uint64, kronScratchWords(md))
			for i, v := range a {
				aw[i/4] |= uint64(v&qMask) << (16 * uint(i%4))
			}
			b.Run(fmt.Sprintf("kron-depth%d/%s", depth, set.Name()), func(b *testing.B) {
				cpuLoop(b, func() {
					clear(tw)
					for i, v := range tr {
						tw[i/4] |= uint64((v+1)%3) << (16 * uint(i%4))
					}
					ternaryMulKronDepth(c, aw, aSum, tw, prod, depth)
				})
			})
		}
		b.Run("ct/"+set.Name(), func(b *testing.B) {
			cpuLoop(b, func() { ternaryMulCT(c, ext, tr) })
		})
	}
}
