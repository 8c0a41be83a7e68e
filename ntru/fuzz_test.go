package ntru

import (
	"sync"
	"testing"
)

var (
	fuzzKeyOnce sync.Once
	fuzzKey     *PrivateKey
	fuzzCT      []byte
)

func fuzzFixtures(t testing.TB) (*PrivateKey, []byte) {
	fuzzKeyOnce.Do(func() {
		k := loadKAT(t, EES1087EP1)
		key, err := ParsePrivateKey(k.bytes(t, "privKeyBlob"))
		if err != nil {
			t.Fatal(err)
		}
		fuzzKey, fuzzCT = key, k.bytes(t, "packedE")
	})
	return fuzzKey, fuzzCT
}

// FuzzDecrypt feeds random and mutated ciphertexts to Decrypt: it must
// return either a message or ErrDecryption, never panic.
func FuzzDecrypt(f *testing.F) {
	key, ct := fuzzFixtures(f)
	f.Add(ct)
	f.Add([]byte{})
	f.Add(make([]byte, len(ct)))
	mut := append([]byte{}, ct...)
	mut[10] ^= 0x40
	f.Add(mut)
	f.Fuzz(func(t *testing.T, c []byte) {
		m, err := key.Decrypt(c)
		if err != nil && err != ErrDecryption {
			t.Fatalf("unexpected error %v", err)
		}
		if err == nil && len(m) > EES1087EP1.MaxMessageLen() {
			t.Fatalf("message of %d bytes", len(m))
		}
	})
}

// FuzzParseKey feeds arbitrary blobs to both parsers; whatever parses must
// re-marshal to a blob that parses to the same key.
func FuzzParseKey(f *testing.F) {
	for _, set := range ParamSets() {
		k := loadKAT(f, set)
		f.Add(k.bytes(f, "pubKeyBlob"))
		f.Add(k.bytes(f, "privKeyBlob"))
	}
	f.Add([]byte{0x01, 0x03, 0x00, 0x05, 0x05})
	f.Add([]byte{0x02})
	f.Fuzz(func(t *testing.T, b []byte) {
		if pub, err := ParsePublicKey(b); err == nil {
			out, _ := pub.MarshalBinary()
			if _, err := ParsePublicKey(out); err != nil {
				t.Fatalf("re-marshalled public key does not parse: %v", err)
			}
		}
		if priv, err := ParsePrivateKey(b); err == nil {
			out, _ := priv.MarshalBinary()
			again, err := ParsePrivateKey(out)
			if err != nil {
				t.Fatalf("re-marshalled private key does not parse: %v", err)
			}
			out2, _ := again.MarshalBinary()
			if string(out) != string(out2) {
				t.Fatal("private key marshalling is not stable")
			}
		}
	})
}
