package store

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func newKey() []byte {
	k := make([]byte, SealKeySize)
	rand.Read(k)
	return k
}

var testPairing = Pairing{Party: 1, KEM: "mlkem768", Secret: []byte("0123456789abcdef0123456789abcdef")}

func sealedFile(t *testing.T, key []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	b, err := OpenBoltWith(path, BoltOptions{Window: 1, SealKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SavePairing(testPairing); err != nil {
		t.Fatal(err)
	}
	b.Close()
	return path
}

// TestSealRoundTrip: a sealed pairing reopens under its key, and the file
// contains neither the secret nor its hex anywhere (free pages included).
func TestSealRoundTrip(t *testing.T) {
	key := newKey()
	path := sealedFile(t, key)
	raw, _ := os.ReadFile(path)
	if bytes.Contains(raw, testPairing.Secret) || bytes.Contains(raw, []byte(hex.EncodeToString(testPairing.Secret))) {
		t.Fatal("the sealed state file contains the secret in the clear")
	}
	b, err := OpenBoltWith(path, BoltOptions{Window: 1, SealKey: key})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, err := b.LoadPairing()
	if err != nil || p == nil || p.Party != 1 || p.KEM != "mlkem768" || !bytes.Equal(p.Secret, testPairing.Secret) {
		t.Fatalf("round trip: %+v %v", p, err)
	}
	// Re-pairing under the key replaces the sealed record.
	q := Pairing{Party: 1, KEM: "mlkem768", Secret: bytes.Repeat([]byte{7}, 32)}
	if err := b.SavePairing(q); err != nil {
		t.Fatal(err)
	}
	if p, err := b.LoadPairing(); err != nil || !bytes.Equal(p.Secret, q.Secret) {
		t.Fatalf("re-pairing: %+v %v", p, err)
	}
}

// TestSealRefusals: a sealed file opened without its key or under another
// key, an altered sealed record, and an unsealed pairing opened with a
// key are all refused at open; nothing falls back to clear text.
func TestSealRefusals(t *testing.T) {
	key := newKey()
	path := sealedFile(t, key)
	for name, o := range map[string]BoltOptions{
		"no key":    {Window: 1},
		"wrong key": {Window: 1, SealKey: newKey()},
	} {
		b, err := OpenBoltWith(path, o)
		if err == nil {
			b.Close()
			t.Fatalf("%s: opened", name)
		}
		if !errors.Is(err, ErrSeal) || !strings.Contains(err.Error(), "--seal-key-file") {
			t.Fatalf("%s: %v; want ErrSeal naming --seal-key-file", name, err)
		}
	}
	// Tamper: flip one bit in each position of the sealed record in turn
	// (header and ciphertext), writing through bbolt.
	var rec []byte
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *bolt.Tx) error { rec = bytes.Clone(tx.Bucket(bucket).Get(keyPairingSealed)); return nil })
	db.Close()
	if rec == nil {
		t.Fatal("no sealed record")
	}
	for i := 0; i < len(rec); i++ {
		bad := bytes.Clone(rec)
		bad[i] ^= 0x01
		db, _ := bolt.Open(path, 0o600, nil)
		db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(keyPairingSealed, bad) })
		db.Close()
		if b, err := OpenBoltWith(path, BoltOptions{Window: 1, SealKey: key}); err == nil {
			p, _ := b.LoadPairing()
			b.Close()
			t.Fatalf("byte %d flipped: opened, pairing %+v", i, p)
		} else if !errors.Is(err, ErrSeal) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	// An unsealed pairing opened with a key: refused, not migrated.
	plain := filepath.Join(t.TempDir(), "plain.db")
	b, _ := OpenBolt(plain, 1)
	b.SavePairing(testPairing)
	b.Close()
	if b, err := OpenBoltWith(plain, BoltOptions{Window: 1, SealKey: key}); err == nil || !errors.Is(err, ErrSeal) || !strings.Contains(err.Error(), "pair afresh") {
		if b != nil {
			b.Close()
		}
		t.Fatalf("unsealed pairing with a key: %v", err)
	}
	if b, err := OpenBolt(plain, 1); err != nil {
		t.Fatalf("the refused file must still open unsealed: %v", err)
	} else {
		b.Close()
	}
	// A fresh (unpaired) file opened with a key is fine: it will be
	// sealed when pairing completes.
	fresh := filepath.Join(t.TempDir(), "fresh.db")
	b, _ = OpenBolt(fresh, 1)
	b.Close()
	if b, err := OpenBoltWith(fresh, BoltOptions{Window: 1, SealKey: key}); err != nil {
		t.Fatalf("unpaired file with a key: %v", err)
	} else {
		b.Close()
	}
}

func TestParseSealKey(t *testing.T) {
	k := newKey()
	if got, err := ParseSealKey(k); err != nil || !bytes.Equal(got, k) {
		t.Fatalf("raw: %v", err)
	}
	if got, err := ParseSealKey([]byte(hex.EncodeToString(k) + "\n")); err != nil || !bytes.Equal(got, k) {
		t.Fatalf("hex: %v", err)
	}
	for _, bad := range [][]byte{nil, k[:31], append(bytes.Clone(k), 0), []byte(strings.Repeat("zz", 32))} {
		if _, err := ParseSealKey(bad); !errors.Is(err, ErrSeal) {
			t.Fatalf("%d bytes: %v", len(bad), err)
		}
	}
	if _, err := OpenBoltWith(filepath.Join(t.TempDir(), "s.db"), BoltOptions{SealKey: k[:16]}); !errors.Is(err, ErrSeal) {
		t.Fatalf("16-byte key: %v", err)
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "seal")
	os.WriteFile(f, []byte(hex.EncodeToString(k)), 0o644)
	if _, err := ReadSealKeyFile(f); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("world-readable seal key file: %v", err)
	}
	os.Chmod(f, 0o400)
	if got, err := ReadSealKeyFile(f); err != nil || !bytes.Equal(got, k) {
		t.Fatalf("seal key file: %v", err)
	}
}

// FuzzSealKey: ParseSealKey never panics and accepts only 32 raw bytes or
// 64 hex digits.
func FuzzSealKey(f *testing.F) {
	f.Add(make([]byte, 32))
	f.Add([]byte(strings.Repeat("ab", 32)))
	f.Add([]byte(" " + strings.Repeat("0", 64) + "\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		k, err := ParseSealKey(in)
		if err == nil && len(k) != SealKeySize {
			t.Fatalf("%d-byte key", len(k))
		}
		if err == nil && len(in) != SealKeySize && len(bytes.TrimSpace(in)) != 2*SealKeySize {
			t.Fatalf("accepted %q", in)
		}
	})
}

// FuzzUnseal: a sealed record of any content never panics the opener and
// opens only when it is what sealPairing wrote.
func FuzzUnseal(f *testing.F) {
	key := bytes.Repeat([]byte{1}, 32)
	f.Add(sealPairing(key, testPairing))
	f.Add([]byte{1, 0, 0})
	f.Fuzz(func(t *testing.T, v []byte) {
		p, err := unsealPairing(key, v)
		if err == nil && (p.Party > 1 || len(p.Secret) == 0) {
			t.Fatalf("opened %+v", p)
		}
	})
}
