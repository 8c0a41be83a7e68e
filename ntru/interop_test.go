package ntru

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"
)

// Data produced by the ntru-crypto reference C code and kord's CLI; see
// testdata/refinterop/README.md for how each file was made.

func refFile(t *testing.T, set ParamSet, suffix string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/refinterop/" + set.Name() + "." + suffix)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func refKeys(t *testing.T, set ParamSet) (*PublicKey, *PrivateKey) {
	t.Helper()
	pub, err := ParsePublicKey(refFile(t, set, "pub"))
	if err != nil {
		t.Fatalf("reference public key: %v", err)
	}
	priv, err := ParsePrivateKey(refFile(t, set, "priv"))
	if err != nil {
		t.Fatalf("reference private key: %v", err)
	}
	return pub, priv
}

// fIndices unpacks a private blob's F: the +1 then the −1 indices.
func fIndices(p *params, f []byte) []uint16 {
	idx := make([]uint16, 2*p.df)
	unpackBits(idx, f, uint(indexBits(p.n)))
	return idx
}

// withoutOIDLen drops the reference's OID-length byte after the tag.
func withoutOIDLen(b []byte) []byte { return append([]byte{b[0]}, b[2:]...) }

func TestRefInteropKeys(t *testing.T) {
	for _, set := range ParamSets() {
		t.Run(set.Name(), func(t *testing.T) {
			refPub, refPriv := refFile(t, set, "pub"), refFile(t, set, "priv")
			if refPub[1] != oidLenByte || refPriv[1] != oidLenByte {
				t.Fatalf("reference blobs start %x / %x, want the OID-length byte 03 after the tag", refPub[:5], refPriv[:5])
			}
			if len(refPub) != set.PublicKeySize()+1 || len(refPriv) != set.PrivateKeySize()+1 {
				t.Fatalf("reference blobs %d / %d bytes, want kord's sizes + 1", len(refPub), len(refPriv))
			}
			pub, priv := refKeys(t, set)
			if pub.Set() != set || priv.Set() != set {
				t.Fatalf("parsed as %v / %v", pub.Set(), priv.Set())
			}
			// kord re-encodes the public blob without the OID-length byte,
			// otherwise byte for byte.
			gotPub, _ := pub.MarshalBinary()
			gotPriv, _ := priv.MarshalBinary()
			fromPriv, _ := priv.Public().MarshalBinary()
			if !bytes.Equal(gotPub, withoutOIDLen(refPub)) || !bytes.Equal(fromPriv, gotPub) {
				t.Error("public key re-encodes differently")
			}
			// kord's own blobs in the reference's framing parse to the same key.
			for _, name := range []string{"kordkey.pub", "kordkey.priv"} {
				blob := refFile(t, set, name)
				framed := append([]byte{blob[0], oidLenByte}, blob[1:]...)
				var k interface{ MarshalBinary() ([]byte, error) }
				var err error
				if name == "kordkey.pub" {
					k, err = ParsePublicKey(framed)
				} else {
					k, err = ParsePrivateKey(framed)
				}
				if err != nil {
					t.Fatalf("%s with the OID-length byte: %v", name, err)
				}
				if b, _ := k.MarshalBinary(); !bytes.Equal(b, blob) {
					t.Errorf("%s with the OID-length byte re-encodes differently", name)
				}
			}
			// The private blob's F: the reference lists the indices in the
			// order IGF-2 drew them, kord sorts them; the same sets.
			want := withoutOIDLen(refPriv)
			hEnd := len(gotPub)
			if len(gotPriv) != len(want) || !bytes.Equal(gotPriv[:hEnd], want[:hEnd]) {
				t.Fatal("private key re-encodes differently")
			}
			p, _ := set.params()
			got, ref := fIndices(p, gotPriv[hEnd:]), fIndices(p, want[hEnd:])
			for _, half := range [][2]int{{0, p.df}, {p.df, 2 * p.df}} {
				a, b := got[half[0]:half[1]], ref[half[0]:half[1]]
				if fmt.Sprint(a) != fmt.Sprint(sortedCopy(b)) {
					t.Errorf("F indices %v, reference %v", a, b)
				}
			}
		})
	}
}

// TestRefInteropDecrypt decrypts every stored ciphertext: the reference's
// (1, 100 and maximum-length messages), kord's empty message under the
// reference key (the reference accepted it), and the reference's
// maximum-length ciphertext under a kord key pair.
func TestRefInteropDecrypt(t *testing.T) {
	for _, set := range ParamSets() {
		t.Run(set.Name(), func(t *testing.T) {
			_, priv := refKeys(t, set)
			kordKey, err := ParsePrivateKey(refFile(t, set, "kordkey.priv"))
			if err != nil {
				t.Fatal(err)
			}
			max := set.MaxMessageLen()
			cases := []struct {
				ct  string
				msg int
				key *PrivateKey
			}{
				{"ct1", 1, priv},
				{"ct100", 100, priv},
				{fmt.Sprintf("ct%d", max), max, priv},
				{"kord-ct0", 0, priv},
				{fmt.Sprintf("kordkey.ct%d", max), max, kordKey},
			}
			for _, c := range cases {
				want := refFile(t, set, fmt.Sprintf("msg%d", c.msg))
				if len(want) != c.msg {
					t.Fatalf("msg%d holds %d bytes", c.msg, len(want))
				}
				ct := refFile(t, set, c.ct)
				got, err := c.key.Decrypt(ct)
				if err != nil {
					t.Errorf("%s: %v", c.ct, err)
					continue
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s: got %d bytes %x, want %x", c.ct, len(got), got, want)
				}
				// The other key pair must not decrypt it.
				other := priv
				if c.key == priv {
					other = kordKey
				}
				if _, err := other.Decrypt(ct); !errors.Is(err, ErrDecryption) {
					t.Errorf("%s under the wrong key: err %v, want ErrDecryption", c.ct, err)
				}
			}
		})
	}
}

// TestRefInteropEncrypt: kord encrypts under the reference public key and
// decrypts with the reference private key.
func TestRefInteropEncrypt(t *testing.T) {
	r := detRand(11)
	for _, set := range ParamSets() {
		t.Run(set.Name(), func(t *testing.T) {
			pub, priv := refKeys(t, set)
			for _, l := range []int{0, 1, 100, set.MaxMessageLen()} {
				msg := randomMsg(r, l)
				ct, err := pub.Encrypt(r, msg)
				if err != nil {
					t.Fatalf("len %d: %v", l, err)
				}
				got, err := priv.Decrypt(ct)
				if err != nil || !bytes.Equal(got, msg) {
					t.Fatalf("len %d: got %x, %v", l, got, err)
				}
			}
		})
	}
}
