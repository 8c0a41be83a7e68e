package pairing

import (
	"bytes"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/mlkem"
	"crypto/mlkem/mlkemtest"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"testing"
)

var updateTranscript = flag.Bool("update-transcript", false, "write testdata/transcript.json afresh")

// transcriptFile is a pairing's known answer: every input fixed (the
// provisioning secret and each party's entropy, field by field in the
// order the party reads it), every message and the agreed K_ch. Another
// backend (an FPGA, a TEE) reproduces it from docs/protocol.md: party 0
// reads nonce0 ‖ x25519_0 ‖ mlkem_seed (d ‖ z); party 1 reads nonce1 ‖
// x25519_1 ‖ mlkem_m (ML-KEM.Encaps_internal's 32 bytes, FIPS 203).
type transcriptFile struct {
	Note      string `json:"note"`
	KEM       string `json:"kem"`
	Secret    string `json:"provisioning_secret"`
	Nonce0    string `json:"nonce0"`
	X25519_0  string `json:"x25519_private0"`
	MLKEMSeed string `json:"mlkem_seed0"`
	Nonce1    string `json:"nonce1"`
	X25519_1  string `json:"x25519_private1"`
	MLKEMM    string `json:"mlkem_encaps_random1"`
	Hello     string `json:"hello"`
	Reply     string `json:"reply"`
	Confirm   string `json:"confirm"`
	KCh       string `json:"kch"`
}

// derandomized swaps crypto/mlkem's encapsulation for FIPS 203's
// Encaps_internal with 32 bytes read from the party's entropy, for the
// duration of the test.
func derandomized(t *testing.T) {
	prev := encapsulate768
	encapsulate768 = func(rand io.Reader, ek *mlkem.EncapsulationKey768) ([]byte, []byte, error) {
		var m [32]byte
		if _, err := io.ReadFull(rand, m[:]); err != nil {
			return nil, nil, err
		}
		return mlkemtest.Encapsulate768(ek, m[:])
	}
	t.Cleanup(func() { encapsulate768 = prev })
}

// field is n bytes of a fixed, documented stream: SHA-256("kord/v1/kat/"
// ‖ name ‖ i) blocks.
func field(name string, n int) []byte {
	var out []byte
	for i := 0; len(out) < n; i++ {
		h := sha256.Sum256(fmt.Appendf(nil, "kord/v1/kat/%s/%d", name, i))
		out = append(out, h[:]...)
	}
	return out[:n]
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTranscriptKnownAnswer runs a pairing on fixed entropy and compares
// every message and K_ch with testdata/transcript.json; it also checks
// that each party read exactly its documented entropy, no more.
func TestTranscriptKnownAnswer(t *testing.T) {
	derandomized(t)
	want := transcriptFile{
		Note:      "kord/v1 pairing, mlkem768: inputs are read in the order listed (party 0: nonce0, x25519_private0, mlkem_seed0; party 1: nonce1, x25519_private1, mlkem_encaps_random1); see docs/protocol.md",
		KEM:       "mlkem768",
		Secret:    hex.EncodeToString(field("secret", 32)),
		Nonce0:    hex.EncodeToString(field("nonce0", nonceSize)),
		X25519_0:  hex.EncodeToString(field("x25519-0", 32)),
		MLKEMSeed: hex.EncodeToString(field("mlkem-seed", mlkem.SeedSize)),
		Nonce1:    hex.EncodeToString(field("nonce1", nonceSize)),
		X25519_1:  hex.EncodeToString(field("x25519-1", 32)),
		MLKEMM:    hex.EncodeToString(field("mlkem-m", 32)),
	}
	if !*updateTranscript {
		data, err := os.ReadFile("testdata/transcript.json")
		if err != nil {
			t.Fatal(err)
		}
		var f transcriptFile
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatal(err)
		}
		// The inputs come from the file: a backend is checked against
		// them, not against how this test derives them.
		want = f
	}
	var rand [2]*bytes.Reader
	rand[0] = bytes.NewReader(bytes.Join([][]byte{unhex(t, want.Nonce0), unhex(t, want.X25519_0), unhex(t, want.MLKEMSeed)}, nil))
	rand[1] = bytes.NewReader(bytes.Join([][]byte{unhex(t, want.Nonce1), unhex(t, want.X25519_1), unhex(t, want.MLKEMM)}, nil))
	kem, err := Lookup(want.KEM)
	if err != nil {
		t.Fatal(err)
	}
	var st [2]*State
	for b := range 2 {
		if st[b], err = New(b, unhex(t, want.Secret), kem, rand[b]); err != nil {
			t.Fatal(err)
		}
	}
	hello, err := st[0].Start()
	if err != nil {
		t.Fatal(err)
	}
	reply, err := st[1].Step(hello)
	if err != nil {
		t.Fatal(err)
	}
	confirm, err := st[0].Step(reply)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := st[1].Step(confirm); err != nil || out != nil {
		t.Fatalf("party 1 on the confirmation: %x, %v", out, err)
	}
	var kch [2][]byte
	for b := range 2 {
		if !st[b].Done() {
			t.Fatalf("party %d not done", b)
		}
		if kch[b], err = st[b].Secret(); err != nil {
			t.Fatal(err)
		}
		if n := rand[b].Len(); n != 0 {
			t.Errorf("party %d left %d bytes of its entropy unread", b, n)
		}
	}
	if !bytes.Equal(kch[0], kch[1]) {
		t.Fatal("the parties' K_ch differ")
	}
	got := want
	got.Hello, got.Reply, got.Confirm, got.KCh = hex.EncodeToString(hello), hex.EncodeToString(reply), hex.EncodeToString(confirm), hex.EncodeToString(kch[0])
	if *updateTranscript {
		data, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("testdata/transcript.json", append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	// K_ch from its definition (the package comment), not from State:
	// both shared secrets from the fixed entropy and the messages.
	x0, err := x25519Key(bytes.NewReader(unhex(t, want.X25519_0)))
	if err != nil {
		t.Fatal(err)
	}
	pub1, err := ecdh.X25519().NewPublicKey(reply[2+nonceSize : 2+nonceSize+pubSize])
	if err != nil {
		t.Fatal(err)
	}
	ssX, err := x0.ECDH(pub1)
	if err != nil {
		t.Fatal(err)
	}
	dk, err := mlkem.NewDecapsulationKey768(unhex(t, want.MLKEMSeed))
	if err != nil {
		t.Fatal(err)
	}
	ctLen := int(reply[2+nonceSize+pubSize])<<8 | int(reply[3+nonceSize+pubSize])
	body := reply[:4+nonceSize+pubSize+ctLen]
	ssK, err := dk.Decapsulate(body[4+nonceSize+pubSize:])
	if err != nil {
		t.Fatal(err)
	}
	th := sha256.Sum256(bytes.Join([][]byte{[]byte("kord/v1/pair/transcript"), hello, body}, nil))
	def, err := hkdf.Key(sha256.New, append(ssX, ssK...), unhex(t, want.Secret), "kord/v1/pair/channel"+string(th[:]), 32)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(def, kch[0]) {
		t.Fatalf("K_ch %x is not HKDF-SHA256(ss_x25519 ‖ ss_kem, secret, \"kord/v1/pair/channel\" ‖ th) = %x", kch[0], def)
	}
	for _, c := range []struct{ name, got, want string }{
		{"hello", got.Hello, want.Hello}, {"reply", got.Reply, want.Reply}, {"confirm", got.Confirm, want.Confirm}, {"kch", got.KCh, want.KCh},
	} {
		if c.got != c.want {
			t.Errorf("%s differs from testdata/transcript.json:\n got %s\nwant %s", c.name, c.got, c.want)
		}
	}
}
