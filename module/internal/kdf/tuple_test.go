package kdf

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

// TestTupleWordsBound: a tuple request's words change with every field of
// its description, and differ between sections and positions.
func TestTupleWordsBound(t *testing.T) {
	var kr [32]byte
	p, err := NewPRF(&kr)
	if err != nil {
		t.Fatal(err)
	}
	base := TupleDesc{Kind: 3, Ring: 64, First: 7, Blocks: 8, In: 3, Out: 1}
	first := func(d TupleDesc) [2]uint64 {
		a, b := make([]uint64, 3), make([]uint64, 3)
		if err := p.TupleWords(&d, a, b); err != nil {
			t.Fatal(err)
		}
		if a[0] == b[0] || a[0] == a[1] {
			t.Fatalf("%+v: sections or positions share words", d)
		}
		return [2]uint64{a[0], b[2]}
	}
	ref := first(base)
	seen := map[[2]uint64]string{ref: "base"}
	for name, f := range map[string]func(*TupleDesc){
		"kind": func(d *TupleDesc) { d.Kind++ }, "ring": func(d *TupleDesc) { d.Ring-- }, "part": func(d *TupleDesc) { d.Part++ },
		"first": func(d *TupleDesc) { d.First++ }, "blocks": func(d *TupleDesc) { d.Blocks++ }, "in": func(d *TupleDesc) { d.In++ },
		"out": func(d *TupleDesc) { d.Out++ }, "k": func(d *TupleDesc) { d.K++ }, "h": func(d *TupleDesc) { d.H++ }, "w": func(d *TupleDesc) { d.W++ },
	} {
		d := base
		f(&d)
		got := first(d)
		if prev, ok := seen[got]; ok {
			t.Fatalf("changing %s gives the words of %s", name, prev)
		}
		seen[got] = name
	}
	if first(base) != ref {
		t.Fatal("the same description drew different words")
	}
}

// TestTupleWordsKnownAnswer pins the tuple words of fixed roots
// (kr = 00 01 … 1f) on testdata/tuples.json.
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
	for _, d := range []TupleDesc{
		{Kind: 3, Ring: 64, First: 100, Blocks: 8, In: 3, Out: 1},
		{Kind: 6, Ring: 64, First: 1 << 40, Blocks: 13, In: 3, Out: 2, W: 2},
	} {
		secs := [][]uint64{make([]uint64, 3), make([]uint64, 3), make([]uint64, 3)}
		if err := p.TupleWords(&d, secs...); err != nil {
			t.Fatal(err)
		}
		var hexes []string
		for _, s := range secs {
			for _, v := range s {
				hexes = append(hexes, fmt.Sprintf("%016x", v))
			}
		}
		got[fmt.Sprintf("kind%d-first%d", d.Kind, d.First)] = hexes
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
