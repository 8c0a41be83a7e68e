package ntru

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"
)

type kat map[string]string

func loadKAT(t testing.TB, set ParamSet) kat {
	t.Helper()
	f, err := os.Open("testdata/" + set.Name() + ".kat.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	k := kat{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		name, val, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("bad KAT line %q", line)
		}
		k[name] = val
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return k
}

func (k kat) bytes(t testing.TB, name string) []byte {
	t.Helper()
	b, err := hex.DecodeString(k[name])
	if err != nil || k[name] == "" {
		t.Fatalf("KAT %s: %v", name, err)
	}
	return b
}

func (k kat) ints(t testing.TB, name string) []int {
	t.Helper()
	var out []int
	for _, s := range strings.Split(k[name], ",") {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("KAT %s: %v", name, err)
		}
		out = append(out, v)
	}
	return out
}

// trits returns a KAT ternary polynomial in the 0, 1, 2 (= −1) form.
func (k kat) trits(t testing.TB, name string) []uint8 {
	var out []uint8
	for _, v := range k.ints(t, name) {
		out = append(out, uint8((v+3)%3))
	}
	return out
}

func (k kat) modq(t testing.TB, name string) []uint16 {
	var out []uint16
	for _, v := range k.ints(t, name) {
		out = append(out, uint16(v)&qMask)
	}
	return out
}

func indicesOf(tr []uint8) (plus, minus []uint16) {
	for i, v := range tr {
		switch v {
		case 1:
			plus = append(plus, uint16(i))
		case 2:
			minus = append(minus, uint16(i))
		}
	}
	return plus, minus
}

func eqU16(t *testing.T, name string, got, want []uint16) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: length %d, want %d", name, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: coefficient %d is %d, want %d", name, i, got[i], want[i])
		}
	}
}

func eqBytes(t *testing.T, name string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s mismatch:\n got %x\nwant %x", name, got, want)
	}
}

// katKey builds the KAT's key from its F and g.
func katKey(t *testing.T, set ParamSet, k kat) *PrivateKey {
	t.Helper()
	p, _ := set.params()
	fPlus, fMinus := indicesOf(k.trits(t, "F"))
	gPlus, gMinus := indicesOf(k.trits(t, "g"))
	key, ok := keyFromFG(set, p, fPlus, fMinus, gPlus, gMinus)
	if !ok {
		t.Fatal("KAT key not invertible")
	}
	return key
}

func TestKATKeyGen(t *testing.T) {
	for _, set := range ParamSets() {
		t.Run(set.Name(), func(t *testing.T) {
			k := loadKAT(t, set)
			p, _ := set.params()
			eqBytes(t, "oid", p.oid[:], k.bytes(t, "oid"))
			key := katKey(t, set, k)
			// f = 1 + 3F as given mod q.
			f := make([]uint16, p.n)
			for i, v := range key.fTrits {
				f[i] = 3 * tritToQ(v) & qMask
			}
			f[0] = (f[0] + 1) & qMask
			eqU16(t, "f", f, k.modq(t, "f"))
			eqU16(t, "h", key.pub.h, k.modq(t, "h"))
			eqBytes(t, "packedH", key.pub.packedH, k.bytes(t, "packedH"))
			pub, _ := key.Public().MarshalBinary()
			eqBytes(t, "pubKeyBlob", pub, k.bytes(t, "pubKeyBlob"))
			priv, _ := key.MarshalBinary()
			eqBytes(t, "privKeyBlob", priv, k.bytes(t, "privKeyBlob"))
			eqBytes(t, "packedListedF", key.packF(), k.bytes(t, "packedListedF"))
			eqBytes(t, "packedF", packTrits5(key.fTrits), k.bytes(t, "packedF"))
			if got := len(pub); got != set.PublicKeySize() {
				t.Errorf("PublicKeySize %d, blob %d", set.PublicKeySize(), got)
			}
			if got := len(priv); got != set.PrivateKeySize() {
				t.Errorf("PrivateKeySize %d, blob %d", set.PrivateKeySize(), got)
			}
		})
	}
}

func TestKATEncryptDecrypt(t *testing.T) {
	for _, set := range ParamSets() {
		t.Run(set.Name(), func(t *testing.T) {
			k := loadKAT(t, set)
			p, _ := set.params()
			key, err := ParsePrivateKey(k.bytes(t, "privKeyBlob"))
			if err != nil {
				t.Fatal(err)
			}
			pub, err := ParsePublicKey(k.bytes(t, "pubKeyBlob"))
			if err != nil {
				t.Fatal(err)
			}
			m, b := k.bytes(t, "m"), k.bytes(t, "b")
			tr := pub.encrypt(m, b)
			if !tr.ok {
				t.Fatal("KAT encryption failed the dm0 check")
			}
			eqBytes(t, "Mbin", tr.mbin, k.bytes(t, "Mbin"))
			eqBytes(t, "Mtrin", tr.mtrin, k.trits(t, "Mtrin"))
			eqBytes(t, "sData", tr.sData, k.bytes(t, "sData"))
			r := make([]uint8, p.n)
			for i, v := range tr.r {
				r[v] = 1 + uint8(i/p.dr)
			}
			eqBytes(t, "r", r, k.trits(t, "r"))
			eqU16(t, "R", tr.bigR, k.modq(t, "R"))
			eqBytes(t, "R4", tr.r4, k.bytes(t, "R4"))
			eqBytes(t, "mask", tr.mask, k.trits(t, "mask"))
			eqBytes(t, "mPrime", tr.mPrime, k.trits(t, "mPrime"))
			eqU16(t, "e", tr.e, k.modq(t, "e"))
			eqBytes(t, "packedE", tr.packedE, k.bytes(t, "packedE"))

			// The public Encrypt with a deterministic source yielding b.
			ct, err := pub.Encrypt(bytes.NewReader(b), m)
			if err != nil {
				t.Fatal(err)
			}
			eqBytes(t, "Encrypt", ct, k.bytes(t, "packedE"))

			dt := key.decrypt(k.bytes(t, "packedE"))
			if dt == nil || !dt.ok {
				t.Fatal("KAT decryption failed")
			}
			eqU16(t, "A", dt.bigA, k.modq(t, "A"))
			wantA := k.ints(t, "a") // centred values, stored mod 2^12
			for i, v := range dt.a {
				if int(v)&0xFFF != wantA[i] {
					t.Fatalf("a: coefficient %d is %d, want %d (mod 4096)", i, v, wantA[i])
				}
				if v < -q/2 || v >= q/2 {
					t.Fatalf("a[%d] = %d not centred", i, v)
				}
			}
			got, err := key.Decrypt(k.bytes(t, "packedE"))
			if err != nil {
				t.Fatal(err)
			}
			eqBytes(t, "message", got, m)
		})
	}
}
