package kdf

import (
	"bytes"
	"crypto/rand"
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
}
