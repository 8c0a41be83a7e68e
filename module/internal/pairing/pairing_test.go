package pairing

import (
	"bytes"
	"crypto/rand"
	"errors"
	"testing"
)

var testSecret = []byte("a provisioning secret of 32 byte")

// run pairs party 0 (secret s0) with party 1 (secret s1) under kem,
// applying tamper to each message on its way (nil: none). It returns both
// states and the first error.
func run(t *testing.T, kem KEM, s0, s1 []byte, tamper func(msg int, b []byte)) (*State, *State, error) {
	t.Helper()
	p0, err := New(0, s0, kem, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p1, err := New(1, s1, kem, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hello, err := p0.Start()
	if err != nil {
		t.Fatal(err)
	}
	msgs := []func([]byte) ([]byte, error){p1.Step, p0.Step, p1.Step}
	m := hello
	for i, step := range msgs {
		if tamper != nil {
			tamper(i, m)
		}
		if m, err = step(m); err != nil {
			return p0, p1, err
		}
	}
	if m != nil {
		t.Fatalf("a reply after the last message: %d bytes", len(m))
	}
	return p0, p1, nil
}

// TestPairEveryKEM: with every registered KEM both parties finish with the
// same channel secret, and each pairing's secret is fresh.
func TestPairEveryKEM(t *testing.T) {
	if len(Names()) < 3 {
		t.Fatalf("KEMs registered: %v", Names())
	}
	for _, name := range Names() {
		kem, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		var last []byte
		for range 2 {
			p0, p1, err := run(t, kem, testSecret, testSecret, nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !p0.Done() || !p1.Done() {
				t.Fatalf("%s: not done", name)
			}
			k0, err0 := p0.Secret()
			k1, err1 := p1.Secret()
			if err0 != nil || err1 != nil || !bytes.Equal(k0, k1) || len(k0) < 32 {
				t.Fatalf("%s: secrets %x, %x (%v, %v)", name, k0, k1, err0, err1)
			}
			if bytes.Equal(k0, last) {
				t.Fatalf("%s: two pairings gave the same channel secret", name)
			}
			last = k0
		}
	}
	if _, err := Lookup("no-such-kem"); err == nil {
		t.Fatal("Lookup of an unknown KEM")
	}
}

// TestWrongSecret: party 0 rejects party 1's confirmation under another
// provisioning secret, and its state is wiped.
func TestWrongSecret(t *testing.T) {
	kem, _ := Lookup(DefaultKEM)
	p0, _, err := run(t, kem, testSecret, []byte("another provisioning secret!!!!!"), nil)
	if !errors.Is(err, ErrRejected) {
		t.Fatalf("got %v, want ErrRejected", err)
	}
	if p0.Done() {
		t.Fatal("party 0 done")
	}
	if _, err := p0.Secret(); err == nil {
		t.Fatal("a secret after a rejected pairing")
	}
}

// TestTamperedMessage: a byte changed anywhere in any of the three
// messages makes one of the parties reject; no pairing completes.
func TestTamperedMessage(t *testing.T) {
	kem, _ := Lookup(DefaultKEM)
	// Message lengths, from one clean run.
	var lens [3]int
	if _, _, err := run(t, kem, testSecret, testSecret, func(i int, b []byte) { lens[i] = len(b) }); err != nil {
		t.Fatal(err)
	}
	for msg := range 3 {
		for _, at := range []int{0, 1, 2, lens[msg] / 2, lens[msg] - 1} {
			p0, p1, err := run(t, kem, testSecret, testSecret, func(i int, b []byte) {
				if i == msg {
					b[at] ^= 0x01
				}
			})
			if err == nil || !errors.Is(err, ErrRejected) && msg != 0 {
				t.Fatalf("message %d byte %d flipped: %v", msg, at, err)
			}
			if p0.Done() && p1.Done() {
				t.Fatalf("message %d byte %d flipped: pairing completed", msg, at)
			}
		}
	}
}

// TestMisuse: bad arguments and messages out of order are refused.
func TestMisuse(t *testing.T) {
	kem, _ := Lookup(DefaultKEM)
	if _, err := New(2, testSecret, kem, rand.Reader); err == nil {
		t.Error("party 2 accepted")
	}
	if _, err := New(0, testSecret[:MinSecret-1], kem, rand.Reader); err == nil {
		t.Error("short secret accepted")
	}
	if _, err := New(0, testSecret, nil, rand.Reader); err == nil {
		t.Error("nil KEM accepted")
	}
	p1, _ := New(1, testSecret, kem, rand.Reader)
	if _, err := p1.Start(); err == nil {
		t.Error("party 1 started a pairing")
	}
	p0, _ := New(0, testSecret, kem, rand.Reader)
	if _, err := p0.Step([]byte("H")); !errors.Is(err, ErrRejected) {
		t.Errorf("party 0 stepped before starting: %v", err)
	}
	p0, _ = New(0, testSecret, kem, rand.Reader)
	if _, err := p0.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := p0.Start(); err == nil {
		t.Error("party 0 started twice")
	}
}
