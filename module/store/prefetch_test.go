package store

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func onDisk(t *testing.T, b *Bolt) Counters {
	t.Helper()
	var c Counters
	err := b.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucket).Get(keyCounters)
		c = Counters{Next: binary.LittleEndian.Uint64(v), PeerFloor: binary.LittleEndian.Uint64(v[8:])}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestBoltPrefetchCommitsBeforeUse: with reservations committed in the
// background, every Save still returns only once its counters are on
// disk, and a reopened store resumes at most one window ahead.
func TestBoltPrefetchCommitsBeforeUse(t *testing.T) {
	const window = 8
	path := filepath.Join(t.TempDir(), "state.db")
	b, err := OpenBolt(path, window)
	if err != nil {
		t.Fatal(err)
	}
	var c Counters
	for i := 0; i < 500; i++ {
		c.Next += uint64(1 + i%3)
		if i%2 == 0 {
			c.PeerFloor = c.Next - 1
		}
		if err := b.Save(c); err != nil {
			t.Fatal(err)
		}
		if d := onDisk(t, b); d.Next < c.Next || d.PeerFloor < c.PeerFloor {
			t.Fatalf("save %d: %+v returned before it was on disk (%+v)", i, c, d)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = OpenBolt(path, window)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r, _ := b.Load()
	if r.Next < c.Next || r.PeerFloor < c.PeerFloor || r.Next > c.Next+window || r.PeerFloor > c.PeerFloor+window {
		t.Fatalf("resumed at %+v after %+v with window %d", r, c, window)
	}
}
