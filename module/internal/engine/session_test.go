package engine

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/internal/channel"
	"github.com/kord-fss/kord/module/internal/kdf"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/store"
)

// boltPair is two durable modules over state files, the way the module
// daemon runs them, and the keys the test expects them to seal under,
// derived here from K_ch (read back from the state file) and the
// challenges the test relays — independently of the modules' own state.
type boltPair struct {
	t      *testing.T
	dir    string
	path   [2]string
	st     [2]*store.Bolt
	d      [2]*Durable
	window uint64 // the stores' reservation window
	kch    []byte
	cur    *kdf.Keys // the keys the modules must seal under now
	rng    *rand.Rand
	seals  map[sealID]string           // every (key, nonce) and (key, counter) used
	used   map[msg.Tier]map[uint64]int // counters party 0 framed at, per tier: how many times
	phase  string
}

// sealID is one use of a key: a GCM nonce, or a keystream position.
type sealID struct {
	key [32]byte // SHA-256 of the key
	use [channel.NonceSize]byte
}

func newBoltPair(t *testing.T) *boltPair { return newBoltPairWindow(t, 1) }

// newBoltPairWindow is newBoltPair with stores that reserve window
// counters per commit.
func newBoltPairWindow(t *testing.T, window uint64) *boltPair {
	p := &boltPair{t: t, dir: t.TempDir(), rng: rand.New(rand.NewPCG(5, 6)), seals: map[sealID]string{},
		used: map[msg.Tier]map[uint64]int{}, window: window}
	for b := 0; b < 2; b++ {
		p.path[b] = filepath.Join(p.dir, fmt.Sprintf("m%d.db", b))
		p.open(b, "provisioning-secret-0123")
	}
	r, err := p.d[0].Provision(ctx, &msg.ProvisionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; len(r.Message) > 0; i++ {
		if r, err = p.d[1-i%2].Provision(ctx, &msg.ProvisionRequest{Message: r.Message}); err != nil {
			t.Fatal(err)
		}
	}
	var k [2][]byte
	for b := 0; b < 2; b++ {
		pr, err := p.st[b].LoadPairing()
		if err != nil || pr == nil {
			t.Fatalf("reading back the pairing: %v", err)
		}
		k[b] = pr.Secret
	}
	if !bytes.Equal(k[0], k[1]) {
		t.Fatal("the two modules hold different channel secrets")
	}
	p.kch = k[0]
	if p.cur, err = kdf.Derive(p.kch); err != nil {
		t.Fatal(err)
	}
	p.phase = "pairing keys"
	t.Cleanup(func() {
		for b := 0; b < 2; b++ {
			p.st[b].Close()
		}
	})
	return p
}

// open opens module b over its state file (newBoltPair: window 1, every
// Save commits, so a copy of the file holds exactly the counters of its
// moment).
func (p *boltPair) open(b int, secret string) {
	st, err := store.OpenBolt(p.path[b], p.window)
	if err != nil {
		p.t.Fatal(err)
	}
	d, err := OpenDurable(Config{Party: b, Secret: []byte(secret), Store: st})
	if err != nil {
		p.t.Fatal(err)
	}
	p.st[b], p.d[b] = st, d
}

// restart closes module b and opens it again from its file, or from the
// bytes of an older copy when old is not nil.
func (p *boltPair) restart(b int, old []byte) {
	p.st[b].Close()
	if old != nil {
		if err := os.WriteFile(p.path[b], old, 0o600); err != nil {
			p.t.Fatal(err)
		}
	}
	p.open(b, "")
	if !p.d[b].Locked() || p.d[b].ch != nil {
		p.t.Fatal("a restarted module is unlocked or holds frame keys")
	}
	// Sealing is impossible, not merely refused by the lock: the engine
	// itself, asked directly, has no keys to seal under.
	_, err := p.d[b].Engine.Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC,
		Shares: []msg.Share{{Mode: msg.Bound, Type: fss.DPF, InBits: 8, OutBits: 8}}})
	if !errors.Is(err, ErrLocked) {
		p.t.Fatalf("a restored engine sealed without session keys: %v", err)
	}
	if r, _ := p.d[b].Engine.Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitPeerFrame, Frame: make([]byte, 40)}); r.Reject != RejectNoSession {
		p.t.Fatalf("a restored engine opened a frame without session keys: %+v", r)
	}
}

// copyFile returns the bytes of module b's state file, closing and
// reopening it around the read so that they are consistent.
func (p *boltPair) copyFile(b int) []byte {
	p.st[b].Close()
	data, err := os.ReadFile(p.path[b])
	if err != nil {
		p.t.Fatal(err)
	}
	p.open(b, "")
	return data
}

// session relays one witness exchange in the given order and sets the
// keys the test expects from the challenges it saw. Orders: 0 is the
// party daemons' (service/peer.go); 1 makes both witnesses before either
// reconciles; 2 has party 1 lead.
func (p *boltPair) session(order int, name string) [2]*Reconciled {
	t, d := p.t, p.d
	t.Helper()
	var c [2]([]byte)
	var w [2][]byte
	var rc [2]*Reconciled
	var err error
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s (order %d): %v", name, order, err)
		}
	}
	challenge := func(b int) { c[b], err = d[b].Challenge(); must(err) }
	witness := func(b int) { w[b], err = d[b].Witness(c[1-b]); must(err) }
	reconcile := func(b int) { rc[b], err = d[b].Reconcile(w[1-b]); must(err) }
	switch order {
	case 0:
		challenge(0)
		challenge(1)
		witness(1)
		reconcile(0)
		witness(0)
		reconcile(1)
	case 1:
		challenge(0)
		challenge(1)
		witness(1)
		witness(0)
		reconcile(1)
		reconcile(0)
	case 2:
		challenge(1)
		challenge(0)
		witness(0)
		reconcile(1)
		witness(1)
		reconcile(0)
	}
	if len(w[0]) != witnessSize || len(w[1]) != witnessSize || witnessSize != 113 {
		t.Fatalf("witnesses of %d and %d bytes, want 113", len(w[0]), len(w[1]))
	}
	if rc[0].Next != rc[1].Next {
		t.Fatalf("%s: modules resynchronised to %d and %d", name, rc[0].Next, rc[1].Next)
	}
	var base [32]byte
	must(kdf.SessionBase(p.kch, &base))
	p.cur, err = kdf.DeriveSession(&base, c[0], c[1])
	must(err)
	p.phase = name
	return rc
}

// round has both modules submit keys in every tier (and a derived one),
// checks each frame against the expected keys and records its key uses,
// delivers the frames and checks that the peer accepts them all.
func (p *boltPair) round() {
	t := p.t
	t.Helper()
	for _, tier := range []msg.Tier{msg.MAC, msg.BatchMAC, msg.Keystream} {
		var s [2][]msg.Share
		k := 1 + p.rng.IntN(4)
		for range k {
			ps := fss.Params{Type: fss.Type(1 + p.rng.IntN(2)), InBits: 1 + p.rng.IntN(64), OutBits: 1 + p.rng.IntN(64)}
			for b := 0; b < 2; b++ {
				s[b] = append(s[b], msg.Share{Mode: msg.Bound, Type: ps.Type, InBits: ps.InBits, OutBits: ps.OutBits,
					AlphaShare: p.rng.Uint64() & prg.Mask(ps.InBits), BetaShare: p.rng.Uint64() & prg.Mask(ps.OutBits)})
			}
		}
		derived := msg.Share{Mode: msg.Derived, Type: fss.DCF, InBits: 16, OutBits: 8, DeriveBeta: true}
		var r [2]*msg.SubmitResponse
		for b := 0; b < 2; b++ {
			var err error
			r[b], err = p.d[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: tier, Shares: append(s[b], derived)})
			if err != nil {
				t.Fatal(err)
			}
			p.check(b, tier, r[b], s[b])
		}
		if r[0].FirstCounter != r[1].FirstCounter {
			t.Fatal("counters out of lockstep")
		}
		for b := 0; b < 2; b++ {
			for _, f := range r[1-b].Frames {
				if a, err := p.d[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitPeerFrame, Frame: f}); err != nil || !a.Accepted {
					t.Fatalf("%s: party %d refused an honest %v frame: %v %+v", p.phase, b, tier, err, a)
				}
			}
		}
	}
}

// check verifies that module b sealed its frames of one submission under
// the expected key at their counters, and records every key use, failing
// on any repeat.
func (p *boltPair) check(b int, tier msg.Tier, r *msg.SubmitResponse, s []msg.Share) {
	t := p.t
	t.Helper()
	peer, err := channel.New(p.cur, 1-b) // opens direction b
	if err != nil {
		t.Fatal(err)
	}
	own, _ := channel.New(p.cur, b)
	note := func(key []byte, use [channel.NonceSize]byte, counter uint64) {
		id := sealID{key: sha256.Sum256(key), use: use}
		if prev, ok := p.seals[id]; ok {
			t.Fatalf("party %d, %v, counter %d (%s): key use %x repeats one of %s", b, tier, counter, p.phase, use, prev)
		}
		p.seals[id] = p.phase
		if b == 0 {
			if p.used[tier] == nil {
				p.used[tier] = map[uint64]int{}
			}
			p.used[tier][counter]++
		}
	}
	ds := make([]channel.Desc, len(s))
	var plain []byte
	for i, sh := range s {
		ds[i] = desc(sh)
		plain = channel.Pack(plain, ds[i], sh.AlphaShare, sh.BetaShare)
	}
	switch tier {
	case msg.Keystream:
		if len(r.Frames) != len(s) {
			t.Fatalf("%d keystream frames for %d shares", len(r.Frames), len(s))
		}
		for i, f := range r.Frames {
			c := r.FirstCounter + uint64(i)
			if !bytes.Equal(f, own.SealKeystream(c, ds[i], s[i].AlphaShare, s[i].BetaShare)) {
				t.Fatalf("%s: party %d's keystream frame at %d is not under the expected key", p.phase, b, c)
			}
			// A keystream position is (key, counter).
			note(p.cur.OTP[b][:], channel.Nonce(c), c)
		}
	case msg.MAC:
		for i, f := range r.Frames {
			c := r.FirstCounter + uint64(i)
			got, err := peer.Open(channel.TierMAC, c, ds[i:i+1], f)
			if err != nil || !bytes.Equal(got, channel.Pack(nil, ds[i], s[i].AlphaShare, s[i].BetaShare)) {
				t.Fatalf("%s: party %d's mac frame at %d is not under the expected key: %v", p.phase, b, c, err)
			}
			note(p.cur.MAC[b][:], [channel.NonceSize]byte(f[:channel.NonceSize]), c)
		}
	case msg.BatchMAC:
		if len(r.Frames) != 1 {
			t.Fatalf("%d batch frames", len(r.Frames))
		}
		f := r.Frames[0]
		got, err := peer.Open(channel.TierBatchMAC, r.FirstCounter, ds, f)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("%s: party %d's batch frame at %d is not under the expected key: %v", p.phase, b, r.FirstCounter, err)
		}
		note(p.cur.Batch[b][:], [channel.NonceSize]byte(f[:channel.NonceSize]), r.FirstCounter)
	}
}

// TestNoncesNeverRepeat: across many submissions, session changes, a
// restart, a restore of old copies of both state files (so that counters
// are used again) and of one, every frame is sealed under the keys the
// documented derivation gives (the pairing's, then each session's), both
// modules agree on them in each relay order, and no (key, nonce) pair
// and no keystream (key, counter) position is ever used twice.
func TestNoncesNeverRepeat(t *testing.T) {
	p := newBoltPair(t)
	for range 4 {
		p.round()
	}
	p.session(0, "session 1")
	for range 4 {
		p.round()
	}
	old := [2][]byte{p.copyFile(0), p.copyFile(1)}
	oldOne := p.copyFile(0)
	p.restart(0, nil)
	p.restart(1, nil)
	p.session(1, "session 2 (after a restart)")
	for range 6 {
		p.round()
	}
	// Both state files back to the copies: the modules resume below the
	// counters session 2 used, and reconcile to the larger of the two old
	// states, so session 3 seals at counters that were sealed at before.
	p.restart(0, old[0])
	p.restart(1, old[1])
	rc := p.session(2, "session 3 (both files restored)")
	for range 6 {
		p.round()
	}
	p.restart(0, oldOne)
	rc4 := p.session(0, "session 4 (one file restored)")
	if !rc4[0].RolledBack {
		t.Fatal("a one-sided restore was not detected")
	}
	for range 2 {
		p.round()
	}
	// The test means something only if counters were in fact reused.
	reused := 0
	for _, m := range p.used {
		for _, n := range m {
			if n > 1 {
				reused++
			}
		}
	}
	if reused == 0 {
		t.Fatalf("no counter was framed twice (session 3 resumed at %d); the restore did not roll anything back", rc[0].Next)
	}
	t.Logf("%d key uses recorded, %d counters framed in more than one session", len(p.seals), reused)
}

// TestWitnessNeedsOwnChallenge: a module makes no witness before it has
// drawn the challenge the witness must carry, and a witness whose carried
// challenge was altered fails authentication and starts no session.
func TestWitnessNeedsOwnChallenge(t *testing.T) {
	p := newBoltPair(t)
	c0, err := p.d[0].Challenge()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.d[1].Witness(c0); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("a witness without an own challenge: %v", err)
	}
	if _, err := p.d[1].Challenge(); err != nil {
		t.Fatal(err)
	}
	w1, err := p.d[1].Witness(c0)
	if err != nil {
		t.Fatal(err)
	}
	ch := p.d[0].ch
	bad := bytes.Clone(w1)
	bad[len(witnessMagic)+2+challengeSize] ^= 1 // the carried own challenge
	if _, err := p.d[0].Reconcile(bad); !errors.Is(err, ErrWitness) || p.d[0].ch != ch {
		t.Fatalf("an altered witness: %v (channel replaced: %v)", err, p.d[0].ch != ch)
	}
}
