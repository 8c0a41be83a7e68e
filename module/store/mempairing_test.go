package store

import (
	"bytes"
	"testing"
)

// TestMemPairing: saving a pairing resets the counters, and what is
// loaded is a copy that later changes to either side do not reach.
func TestMemPairing(t *testing.T) {
	var m MemPairing
	if p, err := m.LoadPairing(); p != nil || err != nil {
		t.Fatalf("fresh store: pairing %v, %v", p, err)
	}
	if err := m.Save(Counters{Next: 9, Accepted: 4}); err != nil {
		t.Fatal(err)
	}
	secret := []byte("channel secret of thirty-two by!")
	if err := m.SavePairing(Pairing{Party: 1, KEM: "mlkem768", Secret: secret}); err != nil {
		t.Fatal(err)
	}
	if c, _ := m.Load(); c != (Counters{}) {
		t.Fatalf("counters %+v after pairing, want zero", c)
	}
	secret[0] ^= 1
	p, err := m.LoadPairing()
	if err != nil || p.Party != 1 || p.KEM != "mlkem768" || !bytes.Equal(p.Secret, []byte("channel secret of thirty-two by!")) {
		t.Fatalf("loaded %+v, %v", p, err)
	}
	p.Secret[0] ^= 1
	if q, _ := m.LoadPairing(); !bytes.Equal(q.Secret, []byte("channel secret of thirty-two by!")) {
		t.Fatal("a loaded pairing shares its secret with the store")
	}
}
