package ntru

import (
	"bytes"
	"crypto/rand"
	"errors"
	mrand "math/rand/v2"
	"testing"
)

// detRand is a deterministic randomness source for tests.
func detRand(seed uint64) *mrand.ChaCha8 {
	var s [32]byte
	s[0] = byte(seed)
	s[1] = byte(seed >> 8)
	return mrand.NewChaCha8(s)
}

// randomMsg draws a message of l bytes from r, one Uint64 a byte.
func randomMsg(r *mrand.ChaCha8, l int) []byte {
	msg := make([]byte, l)
	for i := range msg {
		msg[i] = byte(r.Uint64())
	}
	return msg
}

// naiveMul is the schoolbook reference for the products under test.
func naiveMul(a []uint16, t []uint8) []uint16 {
	n := len(a)
	c := make([]uint16, n)
	for j, tj := range t {
		v := tritToQ(tj)
		for i := range a {
			c[(i+j)%n] += v * a[i]
		}
	}
	for i := range c {
		c[i] &= qMask
	}
	return c
}

func randomPoly(r *mrand.ChaCha8, n int) []uint16 {
	a := make([]uint16, n)
	for i := range a {
		a[i] = uint16(r.Uint64()) & qMask
	}
	return a
}

func TestProducts(t *testing.T) {
	r := detRand(1)
	for _, n := range []int{5, 17, 1087, 1499} {
		for _, d := range []int{1, 3, 63, 200} {
			if 2*d > n {
				continue
			}
			a := randomPoly(r, n)
			// Edge values: 0 and q−1 everywhere matter for the lane bounds.
			a[0], a[n-1] = qMask, 0
			plus, minus, err := randomTernary(r, n, d, d)
			if err != nil {
				t.Fatal(err)
			}
			tr := make([]uint8, n)
			for _, i := range plus {
				tr[i] = 1
			}
			for _, i := range minus {
				tr[i] = 2
			}
			want := naiveMul(a, tr)
			ext, neg := newLaneImage(a, false), newLaneImage(a, true)
			got := make([]uint16, n)
			sparseMul(got, ext, neg, plus, minus)
			eqU16(t, "sparseMul", got, want)
			got2 := make([]uint16, n)
			ternaryMulCT(got2, ext, tr)
			eqU16(t, "ternaryMulCT", got2, want)
		}
	}
	// All coefficients q−1 against a dense ternary polynomial: worst case
	// for lane overflow.
	n := 1499
	a := make([]uint16, n)
	tr := make([]uint8, n)
	for i := range a {
		a[i] = qMask
		tr[i] = uint8(i % 3)
	}
	ext := newLaneImage(a, false)
	got := make([]uint16, n)
	ternaryMulCT(got, ext, tr)
	eqU16(t, "ternaryMulCT dense", got, naiveMul(a, tr))
}

func TestInverse(t *testing.T) {
	r := detRand(2)
	for _, set := range ParamSets() {
		p, _ := set.params()
		plus, minus, _ := randomTernary(r, p.n, p.df, p.df)
		inv, ok := invertModQ(p.n, plus, minus) // verifies f·inv = 1 itself
		if !ok || len(inv) != p.n {
			t.Fatalf("%s: f not invertible", set)
		}
	}
	// x^n − 1 has the factor x − 1 mod 2, so a polynomial with an even
	// number of odd coefficients is not invertible.
	if _, ok := invertMod2([]uint16{1, 1, 0, 0, 0}); ok {
		t.Fatal("1 + x inverted mod x^5 − 1")
	}
}

func TestRoundTrip(t *testing.T) {
	r := detRand(3)
	for _, set := range ParamSets() {
		t.Run(set.Name(), func(t *testing.T) {
			key, err := GenerateKey(r, set)
			if err != nil {
				t.Fatal(err)
			}
			pub := key.Public()
			for _, l := range []int{0, 1, 32, set.MaxMessageLen() - 1, set.MaxMessageLen()} {
				msg := randomMsg(r, l)
				ct, err := pub.Encrypt(r, msg)
				if err != nil {
					t.Fatalf("len %d: %v", l, err)
				}
				if len(ct) != set.CiphertextSize() {
					t.Fatalf("ciphertext %d bytes, want %d", len(ct), set.CiphertextSize())
				}
				got, err := key.Decrypt(ct)
				if err != nil {
					t.Fatalf("len %d: %v", l, err)
				}
				if !bytes.Equal(got, msg) {
					t.Fatalf("len %d: round trip mismatch", l)
				}
			}
			if _, err := pub.Encrypt(r, make([]byte, set.MaxMessageLen()+1)); !errors.Is(err, ErrMessageTooLong) {
				t.Fatalf("over-long message: %v", err)
			}
			// Blobs round-trip and keep working.
			pb, _ := pub.MarshalBinary()
			kb, _ := key.MarshalBinary()
			pub2, err := ParsePublicKey(pb)
			if err != nil {
				t.Fatal(err)
			}
			key2, err := ParsePrivateKey(kb)
			if err != nil {
				t.Fatal(err)
			}
			ct, err := pub2.Encrypt(rand.Reader, []byte("kem secret"))
			if err != nil {
				t.Fatal(err)
			}
			if got, err := key2.Decrypt(ct); err != nil || string(got) != "kem secret" {
				t.Fatalf("after blob round trip: %q, %v", got, err)
			}
		})
	}
}

func TestDecryptRejects(t *testing.T) {
	r := detRand(4)
	set := EES1087EP1
	key, err := GenerateKey(r, set)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := key.Public().Encrypt(r, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, c []byte) {
		t.Helper()
		if m, err := key.Decrypt(c); err != ErrDecryption {
			t.Fatalf("%s: got %q, %v; want ErrDecryption", name, m, err)
		}
	}
	check("empty", nil)
	check("short", ct[:len(ct)-1])
	check("long", append(append([]byte{}, ct...), 0))
	check("zero", make([]byte, len(ct)))
	for _, bit := range []int{0, 7, 8 * 100, 8*len(ct) - 4, 8*len(ct) - 1} {
		c := append([]byte{}, ct...)
		c[bit/8] ^= 1 << (bit % 8)
		check("bit flip", c)
	}
	for i := 0; i < 20; i++ {
		c := append([]byte{}, ct...)
		j := int(r.Uint64() % uint64(len(c)))
		c[j] ^= byte(1 + r.Uint64()%255)
		check("byte change", c)
	}
	// A ciphertext for another key.
	other, _ := GenerateKey(r, set)
	c2, _ := other.Public().Encrypt(r, []byte("hello"))
	check("other key", c2)
}

// A ciphertext whose message-length byte exceeds the maximum decrypts to
// the same single error: build one by encrypting a crafted Mbin.
func TestDecryptRejectsBadLength(t *testing.T) {
	r := detRand(5)
	key, _ := GenerateKey(r, EES1087EP1)
	pub := key.Public()
	p := pub.p
	for _, l := range []byte{byte(p.maxMsg + 1), 255} {
		for try := 0; ; try++ {
			b := make([]byte, p.db/8)
			r.Read(b)
			tr := pub.encrypt(nil, b)
			// Re-encrypt with the length byte changed, keeping r and mask.
			tr.mbin[p.db/8] = l
			bitsToTrits(tr.mtrin, tr.mbin)
			e := make([]uint16, p.n)
			cnt := [3]int{}
			for i := range e {
				v := addMod3(tr.mtrin[i], tr.mask[i])
				cnt[v]++
				e[i] = (tr.bigR[i] + tritToQ(v)) & qMask
			}
			if cnt[0] < p.dm0 || cnt[1] < p.dm0 || cnt[2] < p.dm0 {
				continue
			}
			if _, err := key.Decrypt(packQ(e)); err != ErrDecryption {
				t.Fatalf("length byte %d: %v", l, err)
			}
			break
		}
	}
}

func TestParseRejects(t *testing.T) {
	k := loadKAT(t, EES1087EP1)
	pub := k.bytes(t, "pubKeyBlob")
	priv := k.bytes(t, "privKeyBlob")
	// The C reference's variant with an OID-length byte.
	withLen := func(b []byte) []byte { return append([]byte{b[0], 0x03}, b[1:]...) }
	if _, err := ParsePublicKey(withLen(pub)); err != nil {
		t.Fatalf("OID-length variant: %v", err)
	}
	if _, err := ParsePrivateKey(withLen(priv)); err != nil {
		t.Fatalf("OID-length variant: %v", err)
	}
	bad := map[string][]byte{
		"empty":       nil,
		"tag":         append([]byte{0x02}, pub[1:]...),
		"oid":         append([]byte{0x01, 0x00, 0x07, 0x05}, pub[4:]...),
		"short":       pub[:len(pub)-1],
		"long":        append(append([]byte{}, pub...), 0),
		"padding":     append(append([]byte{}, pub[:len(pub)-1]...), pub[len(pub)-1]|1),
		"priv as pub": priv,
	}
	for name, b := range bad {
		if _, err := ParsePublicKey(b); err == nil {
			t.Errorf("public %s: accepted", name)
		}
	}
	dup := append([]byte{}, priv...)
	// Make the second index equal to the first: rewrite the F list.
	p, _ := EES1087EP1.params()
	idx := make([]uint16, 2*p.df)
	off := 4 + p.ctLen()
	unpackBits(idx, dup[off:], 11)
	idx[1] = idx[0]
	packBits(dup[off:], idx, 11)
	big := append([]byte{}, priv...)
	idx[1] = 1200 // ≥ N
	packBits(big[off:], idx, 11)
	badPriv := map[string][]byte{
		"pub as priv": pub,
		"short":       priv[:len(priv)-1],
		"duplicate":   dup,
		"index ≥ N":   big,
	}
	for name, b := range badPriv {
		if _, err := ParsePrivateKey(b); err == nil {
			t.Errorf("private %s: accepted", name)
		}
	}
}

func TestParamSets(t *testing.T) {
	for _, s := range ParamSets() {
		got, err := ParamSetByName(s.Name())
		if err != nil || got != s {
			t.Fatalf("%s: %v %v", s, got, err)
		}
	}
	if _, err := ParamSetByName("ees401ep1"); err == nil {
		t.Fatal("unknown set accepted")
	}
	if _, err := GenerateKey(rand.Reader, ParamSet(99)); err == nil {
		t.Fatal("GenerateKey accepted an unknown set")
	}
	if EES1087EP1.CiphertextSize() != 1495 || EES1499EP1.CiphertextSize() != 2062 {
		t.Fatal("ciphertext sizes")
	}
}
