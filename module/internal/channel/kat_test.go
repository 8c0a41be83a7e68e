package channel

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"testing"

	"github.com/kord-fss/kord/internal/gentest"
	"github.com/kord-fss/kord/module/internal/kdf"
)

var updateFrames = flag.Bool("update-frames", false, "write testdata/frames.json afresh")

// katSchedule is a key schedule in hex, for the vectors file.
type katSchedule struct {
	Root  string    `json:"root,omitempty"`
	MAC   [2]string `json:"mac"`
	Batch [2]string `json:"batchmac"`
	OTP   [2]string `json:"otp"`
}

func scheduleHex(k *kdf.Keys) katSchedule {
	s := katSchedule{}
	if k.Root != ([32]byte{}) {
		s.Root = hex.EncodeToString(k.Root[:])
	}
	for d := range 2 {
		s.MAC[d], s.Batch[d], s.OTP[d] = hex.EncodeToString(k.MAC[d][:]), hex.EncodeToString(k.Batch[d][:]), hex.EncodeToString(k.OTP[d][:])
	}
	return s
}

// katFrame is one frame sealed by party under the session schedule.
type katFrame struct {
	Party   int         `json:"party"`
	Tier    byte        `json:"tier"` // 1 keystream ("otp"), 2 mac, 3 batchmac
	Counter uint64      `json:"counter"`
	Descs   []Desc      `json:"descs"`
	Shares  [][2]uint64 `json:"shares"` // (α share, β share) per frame
	Frame   string      `json:"frame"`
}

type katFile struct {
	KCh     string      `json:"kch"` // the channel secret from pairing
	Pairing katSchedule `json:"pairing_schedule"`
	C0      string      `json:"session_c0"` // the session challenges
	C1      string      `json:"session_c1"`
	Session katSchedule `json:"session_schedule"`
	Frames  []katFrame  `json:"frames"`
}

func seal(t *testing.T, c *Channel, f katFrame) []byte {
	t.Helper()
	if f.Tier == TierKeystream {
		return c.SealKeystream(f.Counter, f.Descs[0], f.Shares[0][0], f.Shares[0][1])
	}
	var plain []byte
	for i, d := range f.Descs {
		plain = Pack(plain, d, f.Shares[i][0], f.Shares[i][1])
	}
	out, err := c.Seal(f.Tier, f.Counter, f.Descs, plain)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFramesKnownAnswers pins the key schedules (kdf.Derive of K_ch, and
// kdf.DeriveSession of its session base and two challenges) and frames of
// each tier in each direction on testdata/frames.json: fixed inputs, so
// that another backend of the module (an FPGA, a TEE) can be checked
// against them. Each frame also opens at the peer to its shares. Run with
// -update-frames to write the file afresh — only when the formats are
// meant to change.
func TestFramesKnownAnswers(t *testing.T) {
	const path = "testdata/frames.json"
	if *updateFrames {
		var kch, c0, c1 [32]byte
		for i := range kch {
			kch[i], c0[i], c1[i] = byte(i), byte(0x40+i), byte(0x80+i)
		}
		f := katFile{KCh: hex.EncodeToString(kch[:]), C0: hex.EncodeToString(c0[:kdf.SessionChallengeSize]), C1: hex.EncodeToString(c1[:kdf.SessionChallengeSize])}
		dpf16, dcf32 := Desc{Mode: 1, Type: 1, InBits: 16, OutBits: 16}, Desc{Mode: 1, Type: 2, InBits: 32, OutBits: 8}
		for party := range 2 {
			f.Frames = append(f.Frames,
				katFrame{Party: party, Tier: TierKeystream, Counter: 7, Descs: []Desc{dpf16}, Shares: [][2]uint64{{0xbeef, 0x0001}}},
				katFrame{Party: party, Tier: TierMAC, Counter: 8, Descs: []Desc{dcf32}, Shares: [][2]uint64{{0xdeadbeef, 0xff}}},
				katFrame{Party: party, Tier: TierBatchMAC, Counter: 9, Descs: []Desc{dpf16, dcf32}, Shares: [][2]uint64{{0x1234, 0x5678}, {0x9abcdef0, 0x42}}},
			)
		}
		gentest.WriteJSON(t, path, f)
	}
	f := gentest.ReadJSON[katFile](t, path)
	unhex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatalf("bad hex %q", s)
		}
		return b
	}
	kch := unhex(f.KCh)
	pk, err := kdf.Derive(kch)
	if err != nil {
		t.Fatal(err)
	}
	var base [32]byte
	if err := kdf.SessionBase(kch, &base); err != nil {
		t.Fatal(err)
	}
	sk, err := kdf.DeriveSession(&base, unhex(f.C0), unhex(f.C1))
	if err != nil {
		t.Fatal(err)
	}
	if *updateFrames {
		f.Pairing, f.Session = scheduleHex(pk), scheduleHex(sk)
	}
	// The pairing schedule from its definition (docs/protocol.md), apart
	// from kdf's code: kr = HKDF-Expand(K_ch, "kord/v1/kr"); kp and K_otp
	// likewise; each direction key HKDF-Expand(kp or K_otp, label ‖ dir).
	ex := func(prk []byte, label string) []byte {
		k, err := hkdf.Expand(sha256.New, prk, label, 32)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	kp, kotp := ex(kch, "kord/v1/kp"), ex(kch, "kord/v1/otp")
	if !bytes.Equal(pk.Root[:], ex(kch, "kord/v1/kr")) || !bytes.Equal(pk.MAC[1][:], ex(kp, "kord/v1/kp/mac/dir1")) ||
		!bytes.Equal(pk.Batch[0][:], ex(kp, "kord/v1/kp/batchmac/dir0")) || !bytes.Equal(pk.OTP[1][:], ex(kotp, "kord/v1/otp/dir1")) {
		t.Fatal("kdf.Derive differs from its definition")
	}
	if got := scheduleHex(pk); got != f.Pairing {
		t.Fatalf("pairing schedule:\n got %+v\nwant %+v", got, f.Pairing)
	}
	if got := scheduleHex(sk); got != f.Session {
		t.Fatalf("session schedule:\n got %+v\nwant %+v", got, f.Session)
	}
	var ch [2]*Channel
	for b := range 2 {
		if ch[b], err = New(sk, b); err != nil {
			t.Fatal(err)
		}
	}
	for i := range f.Frames {
		v := &f.Frames[i]
		got := seal(t, ch[v.Party], *v)
		if *updateFrames {
			v.Frame = hex.EncodeToString(got)
		}
		if want := unhex(v.Frame); !bytes.Equal(got, want) {
			t.Fatalf("frame %d (party %d, tier %d):\n got %x\nwant %x", i, v.Party, v.Tier, got, want)
		}
		peer := ch[1-v.Party]
		if v.Tier == TierKeystream {
			a, b, err := peer.OpenKeystream(v.Counter, v.Descs[0], got)
			if err != nil || a != v.Shares[0][0] || b != v.Shares[0][1] {
				t.Fatalf("frame %d opens to %x, %x (%v)", i, a, b, err)
			}
			continue
		}
		plain, err := peer.Open(v.Tier, v.Counter, v.Descs, got)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		for j, d := range v.Descs {
			a, b, err := Unpack(plain[:d.Size()], d)
			if err != nil || a != v.Shares[j][0] || b != v.Shares[j][1] {
				t.Fatalf("frame %d share %d opens to %x, %x (%v)", i, j, a, b, err)
			}
			plain = plain[d.Size():]
		}
	}
	if *updateFrames {
		gentest.WriteJSON(t, path, f)
	}
}
