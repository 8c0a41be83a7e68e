package kdf

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

// TestTupleWordsKnownAnswer pins the words and pair tags of two
// preprocessing-tuple descriptions (a triples request, kind 4, and a
// matrix triple, kind 7) under fixed roots (kr = 00 01 … 1f) on
// testdata/tuples.json: a module that derived tuples differently would
// write MP-SPDZ files that differ from every earlier export.
func TestTupleWordsKnownAnswer(t *testing.T) {
	var kr [32]byte
	for i := range kr {
		kr[i] = byte(i)
	}
	p, err := NewPRF(&kr)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, d := range []CorrDesc{
		{Kind: 4, Ring: 64, Counter: 100, Blocks: 8, In: 3, Out: 1},
		{Kind: 7, Ring: 64, Counter: 1 << 40, Blocks: 11, In: 3, Out: 2, W: 2},
	} {
		words := make([]uint64, 2*int(d.Blocks))
		p.CorrWords(&d, words)
		var tag [TagSize]byte
		p.CorrTag(&d, &tag)
		hexes := []string{hex.EncodeToString(tag[:])}
		for _, v := range words {
			hexes = append(hexes, fmt.Sprintf("%016x", v))
		}
		got[fmt.Sprintf("kind%d-counter%d", d.Kind, d.Counter)] = hexes
	}
	const path = "testdata/tuples.json"
	if *updateRoots {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string][]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(want) != fmt.Sprint(got) {
		t.Fatalf("tuple words %v, want %v", got, want)
	}
}
