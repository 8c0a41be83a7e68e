package service

import (
	"math/rand/v2"
	"testing"
)

// TestIDSet: idSet holds exactly the ids added, in order or not.
func TestIDSet(t *testing.T) {
	var s idSet
	want := map[uint64]bool{}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 5000; i++ {
		var id uint64
		switch rng.IntN(3) {
		case 0:
			id = uint64(i) // in order
		case 1:
			id = rng.Uint64N(300)
		default:
			id = rng.Uint64()
		}
		s.add(id)
		want[id] = true
	}
	for id := uint64(0); id < 6000; id++ {
		if s.has(id) != want[id] {
			t.Fatalf("id %d: has %v, want %v", id, s.has(id), want[id])
		}
	}
	for id := range want {
		if !s.has(id) {
			t.Fatalf("id %d missing", id)
		}
	}
	for i := 1; i < len(s.iv); i++ {
		if s.iv[i-1][1]+1 >= s.iv[i][0] {
			t.Fatalf("intervals %v and %v overlap or touch", s.iv[i-1], s.iv[i])
		}
	}
}
