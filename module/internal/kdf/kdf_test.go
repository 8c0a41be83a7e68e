package kdf

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"testing"
)

// TestDeriveSeparatesEveryKey: all keys of a schedule are distinct, the
// schedule is a function of K_ch alone, and different K_ch give different keys.
func TestDeriveSeparatesEveryKey(t *testing.T) {
	kch := make([]byte, 32)
	rand.Read(kch)
	k, err := Derive(kch)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Derive(kch)
	if *k != *again {
		t.Fatal("Derive is not deterministic")
	}
	all := [][]byte{k.Root[:], k.MAC[0][:], k.MAC[1][:], k.Batch[0][:], k.Batch[1][:], k.OTP[0][:], k.OTP[1][:], kch}
	for i := range all {
		for j := i + 1; j < len(all); j++ {
			if bytes.Equal(all[i], all[j]) {
				t.Fatalf("keys %d and %d are equal", i, j)
			}
		}
	}
	kch[0] ^= 1
	other, _ := Derive(kch)
	if other.Root == k.Root || other.MAC[0] == k.MAC[0] {
		t.Fatal("a different channel secret gives the same keys")
	}
	k.Wipe()
	if k.Root != [32]byte{} || k.OTP[1] != [32]byte{} {
		t.Fatal("Wipe left key material")
	}
	if _, err := Derive(make([]byte, 31)); err == nil {
		t.Fatal("a 31-byte channel secret was accepted")
	}
}

// TestRootsAndDerived: roots differ per counter and per party, and the
// derived-mode values differ from the roots' domain.
func TestRootsAndDerived(t *testing.T) {
	var kr [32]byte
	rand.Read(kr[:])
	p, err := NewPRF(&kr)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[16]byte]bool{}
	for c := uint64(0); c < 100; c++ {
		r0, r1 := p.Roots(c)
		if seen[r0] || seen[r1] || r0 == r1 {
			t.Fatalf("root repeated at counter %d", c)
		}
		seen[r0], seen[r1] = true, true
		var d [16]byte
		p.Block(DomainDerived, c, 0, &d)
		if seen[d] {
			t.Fatal("derived block equals a root")
		}
	}
	q, _ := NewPRF(&kr)
	a0, s0, b0, t0 := p.Derived(5)
	a1, s1, b1, t1 := q.Derived(5)
	if a0 != a1 || s0 != s1 || b0 != b1 || t0 != t1 {
		t.Fatal("two modules with the same kr derive different masks")
	}

	// Both, against their definition (docs/protocol.md) computed here
	// with crypto/aes: AES_kr(domain ‖ counter(8, LE) ‖ index ‖ 0…).
	root, _ := aes.NewCipher(kr[:])
	block := func(domain byte, c uint64, index byte) (out [16]byte) {
		var in [16]byte
		in[0] = domain
		binary.LittleEndian.PutUint64(in[1:9], c)
		in[9] = index
		root.Encrypt(out[:], in[:])
		return out
	}
	for _, c := range []uint64{0, 1, 5, 1 << 40, ^uint64(0)} {
		r0, r1 := p.Roots(c)
		if r0 != block(DomainRoots, c, 0) || r1 != block(DomainRoots, c, 1) {
			t.Fatalf("Roots(%d) differ from AES_kr(0x01 ‖ counter ‖ index)", c)
		}
		a, a0, b, b0 := p.Derived(c)
		d0, d1 := block(DomainDerived, c, 0), block(DomainDerived, c, 1)
		if a != binary.LittleEndian.Uint64(d0[:8]) || a0 != binary.LittleEndian.Uint64(d0[8:]) ||
			b != binary.LittleEndian.Uint64(d1[:8]) || b0 != binary.LittleEndian.Uint64(d1[8:]) {
			t.Fatalf("Derived(%d) differs from AES_kr(0x02 ‖ counter ‖ index)", c)
		}
		var tag [TagSize]byte
		p.PairTag(c, 1, 2, 3, 4, a, b, &tag)
		// The PRF's own blocks are cleared after each call.
		if p.in != [16]byte{} || p.out != [16]byte{} {
			t.Fatal("the PRF's scratch blocks were left holding a block")
		}
	}
}

// TestPairTag: the tag is the CBC-MAC of its two blocks under k_tag,
// computed here independently with crypto/cipher's CBC mode; it is the
// same in two modules of a pair and changes with every input it covers.
func TestPairTag(t *testing.T) {
	var kr [32]byte
	rand.Read(kr[:])
	p, err := NewPRF(&kr)
	if err != nil {
		t.Fatal(err)
	}
	// k_tag and the MAC, from the definition in docs/protocol.md.
	root, _ := aes.NewCipher(kr[:])
	var kt [32]byte
	root.Encrypt(kt[:16], []byte{DomainPairTag, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	root.Encrypt(kt[16:], []byte{DomainPairTag, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0})
	tb, _ := aes.NewCipher(kt[:])
	want := func(counter uint64, mode, typ, l, n byte, alpha, beta uint64) [TagSize]byte {
		msg := make([]byte, 32)
		binary.LittleEndian.PutUint64(msg[0:], counter)
		msg[8], msg[9], msg[10], msg[11] = mode, typ, l, n
		binary.LittleEndian.PutUint64(msg[16:], alpha)
		binary.LittleEndian.PutUint64(msg[24:], beta)
		cipher.NewCBCEncrypter(tb, make([]byte, 16)).CryptBlocks(msg, msg)
		return [TagSize]byte(msg[16:])
	}
	q, _ := NewPRF(&kr)
	base := [7]uint64{77, 1, 2, 32, 16, 0xdeadbeef, 0x1234}
	tag := func(p *PRF, v [7]uint64) (out [TagSize]byte) {
		p.PairTag(v[0], byte(v[1]), byte(v[2]), byte(v[3]), byte(v[4]), v[5], v[6], &out)
		return
	}
	got := tag(p, base)
	if got != want(base[0], byte(base[1]), byte(base[2]), byte(base[3]), byte(base[4]), base[5], base[6]) {
		t.Fatal("PairTag is not the CBC-MAC of its blocks under k_tag")
	}
	if tag(q, base) != got {
		t.Fatal("two modules with the same kr compute different tags")
	}
	for i := range base {
		v := base
		v[i] ^= 1
		if tag(p, v) == got {
			t.Fatalf("input %d changed and the tag did not", i)
		}
	}
	kr[0] ^= 1
	other, _ := NewPRF(&kr)
	if tag(other, base) == got {
		t.Fatal("a different kr gives the same tag")
	}
}
