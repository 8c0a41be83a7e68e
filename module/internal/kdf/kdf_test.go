package kdf

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"testing"

	"github.com/kord-fss/kord/internal/gentest"
)

var updateRoots = flag.Bool("update-roots", false, "write testdata/roots.json afresh")

// TestDeriveSeparatesEveryKey: all keys of a schedule are distinct, the
// schedule is a function of K_ch alone, and different K_ch give different keys.
func TestDeriveSeparatesEveryKey(t *testing.T) {
	kch := make([]byte, 32)
	rand.Read(kch)
	k, err := Derive(kch)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Derive(kch)
	if *k != *again {
		t.Fatal("Derive is not deterministic")
	}
	all := [][]byte{k.Root[:], k.MAC[0][:], k.MAC[1][:], k.Batch[0][:], k.Batch[1][:], k.OTP[0][:], k.OTP[1][:], kch}
	for i := range all {
		for j := i + 1; j < len(all); j++ {
			if bytes.Equal(all[i], all[j]) {
				t.Fatalf("keys %d and %d are equal", i, j)
			}
		}
	}
	kch[0] ^= 1
	other, _ := Derive(kch)
	if other.Root == k.Root || other.MAC[0] == k.MAC[0] {
		t.Fatal("a different channel secret gives the same keys")
	}
	k.Wipe()
	if k.Root != [32]byte{} || k.OTP[1] != [32]byte{} {
		t.Fatal("Wipe left key material")
	}
	if _, err := Derive(make([]byte, 31)); err == nil {
		t.Fatal("a 31-byte channel secret was accepted")
	}
}

// TestRootsAndDerived: roots differ per counter and per party, and the
// derived-mode values differ from the roots.
func TestRootsAndDerived(t *testing.T) {
	var kr [32]byte
	rand.Read(kr[:])
	p, err := NewPRF(&kr)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[16]byte]bool{}
	for c := uint64(0); c < 100; c++ {
		r0, r1 := p.Roots(c, 1, 1, 16, 16, 7, 9)
		if seen[r0] || seen[r1] || r0 == r1 {
			t.Fatalf("root repeated at counter %d", c)
		}
		seen[r0], seen[r1] = true, true
		var d [16]byte
		p.Block(DomainDerived, c, 0, &d)
		if seen[d] {
			t.Fatal("derived block equals a root")
		}
	}
	q, _ := NewPRF(&kr)
	ds := &DerivedShape{Mode: 3, Type: 1, InBits: 16, OutBits: 16, DeriveBeta: true}
	a0, s0, b0, t0 := p.Derived(5, ds)
	a1, s1, b1, t1 := q.Derived(5, ds)
	if a0 != a1 || s0 != s1 || b0 != b1 || t0 != t1 {
		t.Fatal("two modules with the same kr derive different masks")
	}

	// Both, against their definition (docs/protocol.md) computed here
	// with crypto/aes: AES_kr(domain ‖ counter(8, LE) ‖ index ‖ 0…).
	root, _ := aes.NewCipher(kr[:])
	block := func(domain byte, c uint64, index byte) (out [16]byte) {
		var in [16]byte
		in[0] = domain
		binary.LittleEndian.PutUint64(in[1:9], c)
		in[9] = index
		root.Encrypt(out[:], in[:])
		return out
	}
	// k_root and the roots' CBC-MAC, from the definition, with
	// crypto/cipher's CBC mode.
	var kroot [32]byte
	k0, k1 := block(DomainRootKey, 0, 0), block(DomainRootKey, 0, 1)
	copy(kroot[:16], k0[:])
	copy(kroot[16:], k1[:])
	rb, _ := aes.NewCipher(kroot[:])
	rootWant := func(c uint64, mode, typ, l, n, index byte, alpha, beta uint64) (out [16]byte) {
		msg := make([]byte, 32)
		binary.LittleEndian.PutUint64(msg[0:], c)
		msg[8], msg[9], msg[10], msg[11], msg[12] = mode, typ, l, n, index
		binary.LittleEndian.PutUint64(msg[16:], alpha)
		binary.LittleEndian.PutUint64(msg[24:], beta)
		cipher.NewCBCEncrypter(rb, make([]byte, 16)).CryptBlocks(msg, msg)
		return [16]byte(msg[16:])
	}
	for _, c := range []uint64{0, 1, 5, 1 << 40, ^uint64(0)} {
		r0, r1 := p.Roots(c, 3, 2, 64, 1, 0xfeed, 1)
		if r0 != rootWant(c, 3, 2, 64, 1, 0, 0xfeed, 1) || r1 != rootWant(c, 3, 2, 64, 1, 1, 0xfeed, 1) {
			t.Fatalf("Roots(%d) differ from the CBC-MAC under k_root", c)
		}
		if r0 == block(0x01, c, 0) || r1 == block(0x01, c, 1) {
			t.Fatalf("Roots(%d) are the retired counter-only roots", c)
		}
		a, a0, b, b0 := p.Derived(c, ds)
		d0, d1 := derivedWant(t, &kr, c, ds, 0), derivedWant(t, &kr, c, ds, 1)
		if a != binary.LittleEndian.Uint64(d0[:8]) || a0 != binary.LittleEndian.Uint64(d0[8:]) ||
			b != binary.LittleEndian.Uint64(d1[:8]) || b0 != binary.LittleEndian.Uint64(d1[8:]) {
			t.Fatalf("Derived(%d) differs from its definition under k_der", c)
		}
		var tag [TagSize]byte
		p.PairTag(c, 1, 2, 3, 4, a, b, &tag)
		// The PRF's own blocks are cleared after each call.
		if p.in != [16]byte{} || p.out != [16]byte{} {
			t.Fatal("the PRF's scratch blocks were left holding a block")
		}
	}
}

// TestPairTag: the tag is the CBC-MAC of its two blocks under k_tag,
// computed here independently with crypto/cipher's CBC mode; it is the
// same in two modules of a pair and changes with every input it covers.
func TestPairTag(t *testing.T) {
	var kr [32]byte
	rand.Read(kr[:])
	p, err := NewPRF(&kr)
	if err != nil {
		t.Fatal(err)
	}
	// k_tag and the MAC, from the definition in docs/protocol.md.
	root, _ := aes.NewCipher(kr[:])
	var kt [32]byte
	root.Encrypt(kt[:16], []byte{DomainPairTag, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	root.Encrypt(kt[16:], []byte{DomainPairTag, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0})
	tb, _ := aes.NewCipher(kt[:])
	want := func(counter uint64, mode, typ, l, n byte, alpha, beta uint64) [TagSize]byte {
		msg := make([]byte, 32)
		binary.LittleEndian.PutUint64(msg[0:], counter)
		msg[8], msg[9], msg[10], msg[11] = mode, typ, l, n
		binary.LittleEndian.PutUint64(msg[16:], alpha)
		binary.LittleEndian.PutUint64(msg[24:], beta)
		cipher.NewCBCEncrypter(tb, make([]byte, 16)).CryptBlocks(msg, msg)
		return [TagSize]byte(msg[16:])
	}
	q, _ := NewPRF(&kr)
	base := [7]uint64{77, 1, 2, 32, 16, 0xdeadbeef, 0x1234}
	tag := func(p *PRF, v [7]uint64) (out [TagSize]byte) {
		p.PairTag(v[0], byte(v[1]), byte(v[2]), byte(v[3]), byte(v[4]), v[5], v[6], &out)
		return
	}
	got := tag(p, base)
	if got != want(base[0], byte(base[1]), byte(base[2]), byte(base[3]), byte(base[4]), base[5], base[6]) {
		t.Fatal("PairTag is not the CBC-MAC of its blocks under k_tag")
	}
	if tag(q, base) != got {
		t.Fatal("two modules with the same kr compute different tags")
	}
	for i := range base {
		v := base
		v[i] ^= 1
		if tag(p, v) == got {
			t.Fatalf("input %d changed and the tag did not", i)
		}
	}
	kr[0] ^= 1
	other, _ := NewPRF(&kr)
	if tag(other, base) == got {
		t.Fatal("a different kr gives the same tag")
	}
}

// TestRootsBindEveryInput: at one counter, changing any one input of the
// key — β, mode, type, ℓ, n or α — changes both roots, independently of
// each other; the same inputs give the same roots in both modules.
func TestRootsBindEveryInput(t *testing.T) {
	var kr [32]byte
	rand.Read(kr[:])
	p, _ := NewPRF(&kr)
	q, _ := NewPRF(&kr)
	type in struct {
		counter         uint64
		mode, typ, l, n byte
		alpha, beta     uint64
	}
	roots := func(p *PRF, v in) ([16]byte, [16]byte) {
		return p.Roots(v.counter, v.mode, v.typ, v.l, v.n, v.alpha, v.beta)
	}
	base := in{counter: 1000, mode: 1, typ: 2, l: 32, n: 16, alpha: 0x8badf00d, beta: 0x4242}
	r0, r1 := roots(p, base)
	if s0, s1 := roots(q, base); s0 != r0 || s1 != r1 {
		t.Fatal("two modules with the same kr derive different roots")
	}
	changes := map[string]func(*in){
		"beta":    func(v *in) { v.beta ^= 1 },
		"mode":    func(v *in) { v.mode = 2 },
		"type":    func(v *in) { v.typ = 1 },
		"inBits":  func(v *in) { v.l = 33 },
		"outBits": func(v *in) { v.n = 15 },
		"alpha":   func(v *in) { v.alpha ^= 1 << 31 },
		"counter": func(v *in) { v.counter++ },
	}
	seen := map[[16]byte]string{r0: "base root 0", r1: "base root 1"}
	for name, change := range changes {
		v := base
		change(&v)
		s0, s1 := roots(p, v)
		for i, r := range [2][16]byte{s0, s1} {
			if prev, ok := seen[r]; ok {
				t.Fatalf("changing %s: root %d equals %s", name, i, prev)
			}
			seen[r] = name
		}
	}
}

// TestRootsKnownAnswers pins the roots on testdata/roots.json (kr and
// inputs fixed there); docs/protocol.md prints its first vector. Run with
// -update-roots to write the file afresh — only when the layout is meant
// to change.
func TestRootsKnownAnswers(t *testing.T) {
	type vector struct {
		Counter uint64 `json:"counter"`
		Mode    byte   `json:"mode"`
		Type    byte   `json:"type"`
		InBits  byte   `json:"in_bits"`
		OutBits byte   `json:"out_bits"`
		Alpha   string `json:"alpha"` // hex, 8 bytes big-endian (the number)
		Beta    string `json:"beta"`
		Root0   string `json:"root0"` // hex, 16 bytes
		Root1   string `json:"root1"`
	}
	type file struct {
		KR      string   `json:"kr"` // hex, 32 bytes
		Vectors []vector `json:"vectors"`
	}
	const path = "testdata/roots.json"
	num := func(h string) uint64 {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != 8 {
			t.Fatalf("bad 8-byte hex %q", h)
		}
		return binary.BigEndian.Uint64(b)
	}
	if *updateRoots {
		var kr [32]byte
		for i := range kr {
			kr[i] = byte(i)
		}
		f := file{KR: hex.EncodeToString(kr[:])}
		p, _ := NewPRF(&kr)
		for _, v := range []vector{
			{Counter: 0, Mode: 1, Type: 1, InBits: 16, OutBits: 16, Alpha: "000000000000beef", Beta: "0000000000000001"},
			{Counter: 0, Mode: 1, Type: 1, InBits: 16, OutBits: 16, Alpha: "000000000000beef", Beta: "0000000000000002"},
			{Counter: 1, Mode: 1, Type: 2, InBits: 32, OutBits: 8, Alpha: "00000000deadbeef", Beta: "00000000000000ff"},
			{Counter: 1, Mode: 2, Type: 2, InBits: 32, OutBits: 8, Alpha: "00000000deadbeef", Beta: "00000000000000ff"},
			{Counter: 1 << 40, Mode: 3, Type: 1, InBits: 64, OutBits: 64, Alpha: "ffffffffffffffff", Beta: "8000000000000000"},
		} {
			r0, r1 := p.Roots(v.Counter, v.Mode, v.Type, v.InBits, v.OutBits, num(v.Alpha), num(v.Beta))
			v.Root0, v.Root1 = hex.EncodeToString(r0[:]), hex.EncodeToString(r1[:])
			f.Vectors = append(f.Vectors, v)
		}
		gentest.WriteJSON(t, path, f)
	}
	f := gentest.ReadJSON[file](t, path)
	krb, err := hex.DecodeString(f.KR)
	if err != nil || len(krb) != 32 || len(f.Vectors) == 0 {
		t.Fatalf("%s: bad kr or no vectors", path)
	}
	p, err := NewPRF((*[32]byte)(krb))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range f.Vectors {
		r0, r1 := p.Roots(v.Counter, v.Mode, v.Type, v.InBits, v.OutBits, num(v.Alpha), num(v.Beta))
		if hex.EncodeToString(r0[:]) != v.Root0 || hex.EncodeToString(r1[:]) != v.Root1 {
			t.Errorf("vector %d: roots %x %x, want %s %s", i, r0, r1, v.Root0, v.Root1)
		}
	}
}

// TestDeriveSession: a session's keys are a function of K_sess and both
// challenges in party order, distinct from the pairing's and from every
// other session's, with all six direction keys distinct.
func TestDeriveSession(t *testing.T) {
	kch := make([]byte, 32)
	rand.Read(kch)
	pairingKeys, _ := Derive(kch)
	var base [32]byte
	if err := SessionBase(kch, &base); err != nil {
		t.Fatal(err)
	}
	c0, c1 := make([]byte, SessionChallengeSize), make([]byte, SessionChallengeSize)
	rand.Read(c0)
	rand.Read(c1)
	k, err := DeriveSession(&base, c0, c1)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := DeriveSession(&base, c0, c1)
	if *k != *again {
		t.Fatal("DeriveSession is not deterministic")
	}
	if k.Root != [32]byte{} {
		t.Fatal("a session set a root key")
	}
	// Against the definition, with crypto/hkdf.
	prk, _ := hkdf.Extract(sha256.New, base[:], append(bytes.Clone(c0), c1...))
	kp, _ := hkdf.Expand(sha256.New, prk, LabelFrame, 32)
	kotp, _ := hkdf.Expand(sha256.New, prk, LabelKeystream, 32)
	mac1, _ := hkdf.Expand(sha256.New, kp, LabelMACDir+"1", 32)
	otp0, _ := hkdf.Expand(sha256.New, kotp, LabelOTPDir+"0", 32)
	if !bytes.Equal(k.MAC[1][:], mac1) || !bytes.Equal(k.OTP[0][:], otp0) {
		t.Fatal("session keys differ from their definition")
	}
	wantBase, _ := hkdf.Expand(sha256.New, kch, LabelSession, 32)
	if !bytes.Equal(base[:], wantBase) {
		t.Fatal("K_sess differs from its definition")
	}
	all := map[[32]byte]string{}
	add := func(name string, ks *Keys) {
		for d := 0; d < 2; d++ {
			for i, key := range [][32]byte{ks.MAC[d], ks.Batch[d], ks.OTP[d]} {
				if prev, ok := all[key]; ok {
					t.Fatalf("%s key %d/%d equals %s", name, i, d, prev)
				}
				all[key] = name
			}
		}
	}
	add("pairing", pairingKeys)
	add("session", k)
	swapped, _ := DeriveSession(&base, c1, c0)
	add("swapped session", swapped)
	c0[0] ^= 1
	other, _ := DeriveSession(&base, c0, c1)
	add("other session", other)
	if _, err := DeriveSession(&base, c0[:15], c1); err == nil {
		t.Fatal("a 15-byte challenge was accepted")
	}
}
