package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestBoltRefusesOpenPermissions(t *testing.T) {
	b, path := openTemp(t, 1)
	b.Close()
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("new state file has mode %v, want 0600", st.Mode().Perm())
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o660, 0o666} {
		os.Chmod(path, mode)
		if _, err := OpenBolt(path, 1); !errors.Is(err, ErrPermissions) {
			t.Fatalf("mode %v: got %v, want ErrPermissions", mode, err)
		}
	}
}

// TestBoltCountersSurviveReopen: a reopened store never resumes below what
// was saved, with exact marks at window 1 and reserved marks otherwise.
func TestBoltCountersSurviveReopen(t *testing.T) {
	for _, window := range []uint64{1, 16} {
		b, path := openTemp(t, window)
		for next := uint64(1); next <= 40; next++ {
			if err := b.Save(Counters{Next: next, PeerFloor: next / 2, Generated: next}); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Save(Counters{Next: 39, PeerFloor: 20}); err == nil {
			t.Fatal("a rollback of Next was accepted")
		}
		if err := b.Save(Counters{Next: 40, PeerFloor: 19}); err == nil {
			t.Fatal("a rollback of PeerFloor was accepted")
		}
		b.Close()
		b, err := OpenBolt(path, window)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := b.Load()
		if c.Next < 40 || c.PeerFloor < 20 {
			t.Fatalf("window %d: resumed at %+v, below what was saved", window, c)
		}
		if window == 1 && (c.Next != 40 || c.PeerFloor != 20) {
			t.Fatalf("window 1: resumed at %+v, want exactly 40/20", c)
		}
		if c.Next > 40+window || c.PeerFloor > 20+window {
			t.Fatalf("window %d: resumed at %+v, skipping more than one window", window, c)
		}
		b.Close()
	}
}

func TestBoltPairing(t *testing.T) {
	b, path := openTemp(t, 1)
	if p, err := b.LoadPairing(); p != nil || err != nil {
		t.Fatalf("fresh store has a pairing: %v %v", p, err)
	}
	b.Save(Counters{Next: 9, PeerFloor: 9})
	want := Pairing{Party: 1, KEM: "mlkem768", Secret: []byte("0123456789abcdef0123456789abcdef")}
	if err := b.SavePairing(want); err != nil {
		t.Fatal(err)
	}
	if c, _ := b.Load(); c != (Counters{}) {
		t.Fatalf("a new pairing must restart the counters, got %+v", c)
	}
	b.Close()
	b, _ = OpenBolt(path, 1)
	defer b.Close()
	got, err := b.LoadPairing()
	if err != nil || got == nil || got.Party != want.Party || got.KEM != want.KEM || string(got.Secret) != string(want.Secret) {
		t.Fatalf("pairing round trip: %+v %v", got, err)
	}
	for _, bad := range []Pairing{{Party: 2, KEM: "x", Secret: []byte{1}}, {Party: 0, KEM: "x"}} {
		if err := b.SavePairing(bad); err == nil {
			t.Fatalf("malformed pairing %+v accepted", bad)
		}
	}
}

// TestBoltRefusesSymlink: the state file is opened without following
// links, so a link planted at the path (even to a well-protected file) is
// refused rather than followed.
func TestBoltRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	real, link := filepath.Join(dir, "real.db"), filepath.Join(dir, "state.db")
	b, err := OpenBolt(real, 1)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symlinks here:", err)
	}
	if b, err := OpenBolt(link, 1); err == nil {
		b.Close()
		t.Fatal("opened the state file through a symlink")
	}
}

// TestBoltAccepted: Accepted is not reserved — a reopened store resumes at
// its value of the last commit, never above what was saved (the rollback
// witness needs a lower bound) — and is never lowered by a Save.
func TestBoltAccepted(t *testing.T) {
	for _, window := range []uint64{1, 16} {
		b, path := openTemp(t, window)
		for next := uint64(1); next <= 40; next++ {
			if err := b.Save(Counters{Next: next, PeerFloor: next, Accepted: next}); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Save(Counters{Next: 40, PeerFloor: 40, Accepted: 39}); err == nil {
			t.Fatal("a rollback of Accepted was accepted")
		}
		b.Close()
		b, err := OpenBolt(path, window)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := b.Load()
		if c.Accepted > 40 || c.Accepted > c.Next || c.Accepted+window < 40 {
			t.Fatalf("window %d: resumed at %+v, want accepted at most 40 and at least 40-window", window, c)
		}
		if window == 1 && c.Accepted != 40 {
			t.Fatalf("window 1: resumed at accepted %d, want 40", c.Accepted)
		}
		b.Close()
	}
}

// TestBoltOldCountersRecord: a state file written before Accepted (a
// 24-byte counters record) opens, with Accepted 0, and the next commit
// writes the 32-byte record.
func TestBoltOldCountersRecord(t *testing.T) {
	b, path := openTemp(t, 1)
	b.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := encCounters(Counters{Next: 70, PeerFloor: 66, Generated: 100})[:24]
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(keyCounters, old) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	b, err = OpenBolt(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := b.Load(); c != (Counters{Next: 70, PeerFloor: 66, Generated: 100}) {
		t.Fatalf("old record read as %+v", c)
	}
	if err := b.Save(Counters{Next: 71, PeerFloor: 67, Generated: 101, Accepted: 67}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	b, err = OpenBolt(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if c, _ := b.Load(); c != (Counters{Next: 71, PeerFloor: 67, Generated: 101, Accepted: 67}) {
		t.Fatalf("after a commit: %+v", c)
	}
}

// openTemp opens a fresh state file in the test's temporary directory.
func openTemp(t *testing.T, window uint64) (*Bolt, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	b, err := OpenBolt(path, window)
	if err != nil {
		t.Fatal(err)
	}
	return b, path
}
