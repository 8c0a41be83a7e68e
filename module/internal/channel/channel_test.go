package channel

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/internal/kdf"
)

func pairOfChannels(t *testing.T) (*Channel, *Channel) {
	t.Helper()
	kch := make([]byte, 32)
	rand.Read(kch)
	k, err := kdf.Derive(kch)
	if err != nil {
		t.Fatal(err)
	}
	c0, err := New(k, 0)
	if err != nil {
		t.Fatal(err)
	}
	c1, err := New(k, 1)
	if err != nil {
		t.Fatal(err)
	}
	return c0, c1
}

func TestPackUnpack(t *testing.T) {
	for _, d := range []Desc{{1, 1, 1, 1, 0}, {1, 2, 7, 9, 0}, {1, 1, 16, 16, 0}, {2, 2, 64, 64, 0}, {1, 1, 33, 5, 0}} {
		a, b := uint64(0x0123456789abcdef), uint64(0xfedcba9876543210)
		a &= 1<<uint(min(d.InBits, 63)) - 1
		b &= 1<<uint(min(d.OutBits, 63)) - 1
		p := Pack(nil, d, a, b)
		if len(p) != d.Size() {
			t.Fatalf("%+v: packed %d bytes, Size %d", d, len(p), d.Size())
		}
		ga, gb, err := Unpack(p, d)
		if err != nil || ga != a || gb != b {
			t.Fatalf("%+v: round trip (%x,%x) -> (%x,%x) %v", d, a, b, ga, gb, err)
		}
		if _, _, err := Unpack(p[:len(p)-1], d); !errors.Is(err, ErrLength) {
			t.Fatalf("%+v: short frame: %v", d, err)
		}
		if d.InBits%8 != 0 {
			bad := bytes.Clone(p)
			bad[(d.InBits+7)/8-1] |= 0x80
			if _, _, err := Unpack(bad, d); !errors.Is(err, ErrRange) {
				t.Fatalf("%+v: bits above ℓ accepted: %v", d, err)
			}
		}
	}
}

// TestKeystreamDirections: the peer opens a frame to the sender's shares;
// a reflected frame (opened by its own sender) does not give them back.
func TestKeystreamDirections(t *testing.T) {
	c0, c1 := pairOfChannels(t)
	d := Desc{1, 1, 32, 32, 0}
	a, b := uint64(0xdeadbeef), uint64(0x12345678)
	f := c0.SealKeystream(7, d, a, b)
	if len(f) != 8 {
		t.Fatalf("frame is %d bytes, want 8", len(f))
	}
	ga, gb, err := c1.OpenKeystream(7, d, f)
	if err != nil || ga != a || gb != b {
		t.Fatalf("peer opened (%x,%x) %v", ga, gb, err)
	}
	ra, rb, err := c0.OpenKeystream(7, d, f)
	if err != nil {
		t.Fatal(err)
	}
	if ra == a && rb == b {
		t.Fatal("a reflected keystream frame decrypts to the sender's own shares")
	}
	if oa, _, _ := c1.OpenKeystream(8, d, f); oa == a {
		t.Fatal("the keystream does not depend on the counter")
	}
	// The two directions' keystreams differ at the same counter.
	if bytes.Equal(c0.SealKeystream(9, d, 0, 0), c1.SealKeystream(9, d, 0, 0)) {
		t.Fatal("both directions share a keystream")
	}
}

// TestMACFailClosed: every bit flip, a wrong counter, a wrong shape, a
// reflection and a foreign pairing all fail authentication.
func TestMACFailClosed(t *testing.T) {
	c0, c1 := pairOfChannels(t)
	other, _ := pairOfChannels(t)
	ds := []Desc{{1, 1, 16, 16, 0}, {1, 2, 8, 8, 0}}
	plain := Pack(Pack(nil, ds[0], 0xbeef, 0x1234), ds[1], 0x12, 0x34)
	for _, tier := range []byte{TierMAC, TierBatchMAC} {
		f, err := c0.Seal(tier, 42, ds, plain)
		if err != nil {
			t.Fatal(err)
		}
		if len(f) != EnvelopeSize(ds) || len(f) != len(plain)+36 {
			t.Fatalf("envelope %d bytes, want %d", len(f), len(plain)+36)
		}
		got, err := c1.Open(tier, 42, ds, f)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("honest frame: %v", err)
		}
		for i := range f {
			for bit := 0; bit < 8; bit++ {
				bad := bytes.Clone(f)
				bad[i] ^= 1 << uint(bit)
				if _, err := c1.Open(tier, 42, ds, bad); err == nil {
					t.Fatalf("tier %d: flip of byte %d bit %d accepted", tier, i, bit)
				}
			}
		}
		if _, err := c1.Open(tier, 43, ds, f); !errors.Is(err, ErrAuth) {
			t.Fatalf("wrong counter: %v", err)
		}
		swapped := []Desc{ds[1], ds[0]}
		if _, err := c1.Open(tier, 42, swapped, f); !errors.Is(err, ErrAuth) {
			t.Fatalf("wrong shapes: %v", err)
		}
		if _, err := c1.Open(tier, 42, ds[:1], f); !errors.Is(err, ErrLength) {
			t.Fatalf("wrong batch length: %v", err)
		}
		if _, err := c0.Open(tier, 42, ds, f); !errors.Is(err, ErrAuth) {
			t.Fatalf("reflection: %v", err)
		}
		if _, err := other.Open(tier, 42, ds, f); !errors.Is(err, ErrAuth) {
			t.Fatalf("foreign pairing: %v", err)
		}
		other := TierMAC + TierBatchMAC - tier
		if _, err := c1.Open(other, 42, ds, f); !errors.Is(err, ErrAuth) {
			t.Fatalf("cross-tier: %v", err)
		}
	}
	if _, err := c0.Seal(TierKeystream, 1, ds, plain); err == nil {
		t.Fatal("keystream tier has no AEAD but Seal accepted it")
	}
}

func TestNewRejectsBadParty(t *testing.T) {
	k, _ := kdf.Derive(make([]byte, 32))
	if _, err := New(k, 2); err == nil {
		t.Fatal("party 2 accepted")
	}
}

// TestAppendingForms: SealTo and OpenTo write the same envelope and
// plaintext as Seal and Open, in the caller's buffers, with no
// allocation once those have room; SealKeystreamTo likewise.
func TestAppendingForms(t *testing.T) {
	c0, c1 := pairOfChannels(t)
	ds := []Desc{{1, 1, 32, 32, 0}, {1, 2, 16, 8, 0}}
	var plain []byte
	plain = Pack(plain, ds[0], 0xdeadbeef, 7)
	plain = Pack(plain, ds[1], 0xbeef, 9)
	for _, tier := range []byte{TierMAC, TierBatchMAC} {
		want, err := c0.Seal(tier, 42, ds, plain)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 3, 3+EnvelopeSize(ds))
		got, err := c0.SealTo(buf, tier, 42, ds, plain)
		if err != nil || !bytes.Equal(got[3:], want) || &got[0] != &buf[0] {
			t.Fatalf("tier %d: SealTo differs from Seal or left dst", tier)
		}
		open, err := c1.OpenTo(make([]byte, 0, len(plain)), tier, 42, ds, want)
		if err != nil || !bytes.Equal(open, plain) {
			t.Fatalf("tier %d: OpenTo: %v", tier, err)
		}
		if n := testing.AllocsPerRun(50, func() {
			got, _ = c0.SealTo(buf[:3], tier, 42, ds, plain)
			open, _ = c1.OpenTo(open[:0], tier, 42, ds, want)
		}); n != 0 {
			t.Errorf("tier %d: SealTo and OpenTo allocate %v times per call", tier, n)
		}
	}
	d := Desc{1, 1, 32, 32, 0}
	buf := make([]byte, 0, d.Size())
	if got := c0.SealKeystreamTo(buf, 9, d, 5, 6); !bytes.Equal(got, c0.SealKeystream(9, d, 5, 6)) {
		t.Fatal("SealKeystreamTo differs from SealKeystream")
	}
	if n := testing.AllocsPerRun(50, func() { c0.SealKeystreamTo(buf[:0], 9, d, 5, 6) }); n != 0 {
		t.Errorf("SealKeystreamTo allocates %v times per call", n)
	}
	if c0.in != [16]byte{} || c0.out != [16]byte{} {
		t.Error("the keystream block was left in the channel")
	}
}

// TestNonceIsTheCounter: a sealed envelope's nonce field is its counter
// (8 bytes LE, then 4 zero bytes) and GCM ran under that nonce; a frame
// sealed correctly under the sender's key but with any other nonce — one
// that would authenticate if the opener trusted the field — is refused.
func TestNonceIsTheCounter(t *testing.T) {
	c0, c1 := pairOfChannels(t)
	ds := []Desc{{1, 1, 16, 16, 0}}
	plain := Pack(nil, ds[0], 0xbeef, 0x1234)
	for _, tier := range []byte{TierMAC, TierBatchMAC} {
		for _, counter := range []uint64{0, 42, 1<<63 + 5} {
			f, err := c0.Seal(tier, counter, ds, plain)
			if err != nil {
				t.Fatal(err)
			}
			want := Nonce(counter)
			if [NonceSize]byte(f[:NonceSize]) != want || binary.LittleEndian.Uint64(want[:8]) != counter || [4]byte(want[8:]) != [4]byte{} {
				t.Fatalf("tier %d counter %d: nonce field %x", tier, counter, f[:NonceSize])
			}
			g, _ := c0.aead(tier, 0)
			// The same envelope but with a random nonce, valid under GCM.
			var other [NonceSize]byte
			rand.Read(other[:])
			forged := append(append(other[:], f[NonceSize:HeaderSize]...), g.Seal(nil, other[:], plain, AD(tier, 0, counter, ds))...)
			if _, err := g.Open(nil, other[:], forged[HeaderSize:], AD(tier, 0, counter, ds)); err != nil {
				t.Fatal("the forged envelope is not valid GCM; the test proves nothing")
			}
			if _, err := c1.Open(tier, counter, ds, forged); !errors.Is(err, ErrAuth) {
				t.Fatalf("tier %d: a frame under a nonce other than its counter's was accepted: %v", tier, err)
			}
			if got, err := c1.Open(tier, counter, ds, f); err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("tier %d: honest frame: %v", tier, err)
			}
		}
	}
}

// TestKeystreamBulk: the bulk forms write and read exactly the one-key
// frames, concatenated, and refuse a frame of the wrong length or range.
func TestKeystreamBulk(t *testing.T) {
	p0, p1 := pairOfChannels(t)
	for _, d := range []Desc{{Mode: 1, Type: 1, InBits: 12, OutBits: 33}, {Mode: 1, Type: 2, InBits: 64, OutBits: 64}} {
		const n = 21
		a, b := make([]uint64, n), make([]uint64, n)
		var want []byte
		for i := range n {
			a[i], b[i] = uint64(i*7919)&prg.Mask(d.InBits), uint64(i*104729)&prg.Mask(d.OutBits)
			want = p0.SealKeystreamTo(want, 1000+uint64(i), d, a[i], b[i])
		}
		got := p0.SealKeystreamBulk(nil, 1000, d, a, b)
		if !bytes.Equal(got, want) {
			t.Fatalf("%+v: bulk frames differ from the one-key frames", d)
		}
		x, y := make([]uint64, n), make([]uint64, n)
		if err := p1.OpenKeystreamBulk(1000, d, got, x, y); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if x[i] != a[i] || y[i] != b[i] {
				t.Fatalf("%+v: key %d opened wrong", d, i)
			}
		}
		if err := p1.OpenKeystreamBulk(1000, d, got[1:], x, y); err == nil {
			t.Fatal("short bulk frame opened")
		}
	}
	d := Desc{Mode: 1, Type: 1, InBits: 12, OutBits: 12}
	bad := bytes.Repeat([]byte{0xff}, 2*d.Size())
	if err := p1.OpenKeystreamBulk(0, d, bad, make([]uint64, 2), make([]uint64, 2)); err == nil {
		t.Fatal("out-of-range bulk frame opened")
	}
}
