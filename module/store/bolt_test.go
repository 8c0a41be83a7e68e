package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestBoltRefusesOpenPermissions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	b, err := OpenBolt(path, 1)
	if err != nil {
		t.Fatal(err)
	}
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
		path := filepath.Join(t.TempDir(), "state.db")
		b, err := OpenBolt(path, window)
		if err != nil {
			t.Fatal(err)
		}
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
		b, err = OpenBolt(path, window)
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
	path := filepath.Join(t.TempDir(), "state.db")
	b, err := OpenBolt(path, 1)
	if err != nil {
		t.Fatal(err)
	}
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
