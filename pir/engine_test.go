package pir

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
)

func randomDB(t testing.TB, rng *rand.Rand, count, size int) *DB {
	t.Helper()
	data := make([]byte, count*size)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	db, err := NewDB(size, data)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// naiveAnswer XORs the records a key selects, one Eval per record.
func naiveAnswer(t testing.TB, db *DB, k *fss.XorKey) []byte {
	out := make([]byte, db.RecordSize)
	for x := 0; x < db.Count; x++ {
		b, err := k.Eval(uint64(x))
		if err != nil {
			t.Fatal(err)
		}
		if b == 1 {
			for i, v := range db.Record(x) {
				out[i] ^= v
			}
		}
	}
	return out
}

func TestEngineRetrieves(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	cases := []struct{ count, size, batch, workers int }{
		{1, 16, 1, 1}, {2, 16, 3, 2}, {3, 17, 2, 2}, {100, 16, 5, 2}, {128, 24, 4, 3},
		{129, 16, 7, 2}, {1000, 100, 3, 2}, {5000, 16, 33, 2}, {300, 4096, 2, 2}, {70000, 16, 4, 2},
	}
	for _, c := range cases {
		db := randomDB(t, rng, c.count, c.size)
		e := NewEngine(db, c.workers)
		l := db.DomainBits()
		idx := make([]int, c.batch)
		var k0s, k1s []*fss.XorKey
		for i := range idx {
			idx[i] = rng.IntN(c.count)
			if i == 0 {
				idx[i] = c.count - 1
			}
			k0, k1, err := fss.GenXor(nil, l, uint64(idx[i]), 1)
			if err != nil {
				t.Fatal(err)
			}
			k0s, k1s = append(k0s, k0), append(k1s, k1)
		}
		a0, err := e.Answer(k0s)
		if err != nil {
			t.Fatal(err)
		}
		a1, err := e.Answer(k1s)
		if err != nil {
			t.Fatal(err)
		}
		for i := range idx {
			got := make([]byte, c.size)
			for j := range got {
				got[j] = a0[i][j] ^ a1[i][j]
			}
			if !bytes.Equal(got, db.Record(idx[i])) {
				t.Fatalf("N=%d S=%d: query %d for record %d returned the wrong record", c.count, c.size, i, idx[i])
			}
			if c.count <= 5000 && i < 2 && !bytes.Equal(a0[i], naiveAnswer(t, db, k0s[i])) {
				t.Fatalf("N=%d S=%d: server answer differs from the naive XOR", c.count, c.size)
			}
		}
	}
}

func TestEngineRejectsWrongWidth(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	db := randomDB(t, rng, 1000, 16)
	k0, _, _ := fss.GenXor(nil, db.DomainBits()+1, 3, 1)
	if _, err := NewEngine(db, 2).Answer([]*fss.XorKey{k0}); !errors.Is(err, ErrKeyWidth) {
		t.Fatalf("got %v, want ErrKeyWidth", err)
	}
}

func BenchmarkEngine20x16(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	db := randomDB(b, rng, 1<<20, 16)
	e := NewEngine(db, 0)
	var keys []*fss.XorKey
	for i := 0; i < 32; i++ {
		k0, _, _ := fss.GenXor(nil, 20, uint64(rng.IntN(1<<20)), 1)
		keys = append(keys, k0)
	}
	b.SetBytes(int64(len(db.Records())) * 32)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.Answer(keys); err != nil {
			b.Fatal(err)
		}
	}
	_ = prg.Active
}
