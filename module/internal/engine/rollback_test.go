package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
)

// ahead has module b assign n counters to own requests that its peer never
// sees (the peer's application sent fewer, or the peer crashed first): its
// frames are dropped, and its next counter runs ahead of the peer's.
func (p *boltPair) ahead(b, n int) {
	p.t.Helper()
	for range n {
		_, err := p.d[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC,
			Shares: []msg.Share{{Mode: msg.Bound, Type: fss.DPF, InBits: 8, OutBits: 8}}})
		if err != nil {
			p.t.Fatal(err)
		}
	}
}

// half runs one submission on both modules and delivers the frames to
// module b only (the other crashes, or the session ends, before its own
// arrive).
func (p *boltPair) half(b int) {
	p.t.Helper()
	var r [2]*msg.SubmitResponse
	for m := 0; m < 2; m++ {
		var err error
		r[m], err = p.d[m].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.BatchMAC,
			Shares: []msg.Share{{Mode: msg.Bound, Type: fss.DCF, InBits: 16, OutBits: 8}, {Mode: msg.Bound, Type: fss.DPF, InBits: 8, OutBits: 8}}})
		if err != nil {
			p.t.Fatal(err)
		}
	}
	for _, f := range r[1-b].Frames {
		if a, err := p.d[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitPeerFrame, Frame: f}); err != nil || !a.Accepted {
			p.t.Fatalf("party %d refused an honest frame: %v %+v", b, err, a)
		}
	}
}

// noRollback fails if a witness exchange reported a rollback.
func noRollback(t *testing.T, what string, rc [2]*Reconciled) {
	t.Helper()
	for b := 0; b < 2; b++ {
		if rc[b] != nil && rc[b].RolledBack {
			t.Fatalf("%s: party %d reported a rollback, but no state file was set back (%+v)", what, b, *rc[b])
		}
	}
	if rc[0] != nil && rc[1] != nil && rc[0].Next != rc[1].Next {
		t.Fatalf("%s: resynchronised to %d and %d", what, rc[0].Next, rc[1].Next)
	}
}

// TestCrashIsNoRollback: module crashes (a store reopened at its last
// commit, as after kill -9) at the points where the witness used to raise
// a false rollback alarm (about one module kill in four under `kord chaos
// crash --kill modules`). Party 0's witness is made after its own
// Reconcile, so it carries the common target — party 0's next counter, its
// floor, and the restarted module's own reserved floor — not what party 0
// accepted; the restarted party 1 compared that with its next counter.
func TestCrashIsNoRollback(t *testing.T) {
	t.Run("peer ahead", func(t *testing.T) {
		// Party 0 assigned more counters than party 1 reserved; party 1
		// crashes.
		p := newBoltPairWindow(t, 16)
		for range 3 {
			p.round()
		}
		p.ahead(0, 40)
		p.restart(1, nil)
		noRollback(t, "party 1 restarted behind party 0's next counter", p.session(0, "after the crash"))
		p.round()
	})
	t.Run("crash between the two Reconciles", func(t *testing.T) {
		// Party 0 restarts (its floor a window ahead), reconciles; party 1
		// crashes before its own Reconcile, and restarts below party 0's
		// new floor.
		p := newBoltPairWindow(t, 16)
		for range 3 {
			p.round()
		}
		p.half(0)
		p.restart(0, nil)
		c0, err := p.d[0].Challenge()
		if err != nil {
			t.Fatal(err)
		}
		c1, err := p.d[1].Challenge()
		if err != nil {
			t.Fatal(err)
		}
		w1, err := p.d[1].Witness(c0)
		if err != nil {
			t.Fatal(err)
		}
		rc0, err := p.d[0].Reconcile(w1)
		if err != nil {
			t.Fatal(err)
		}
		noRollback(t, "party 0's Reconcile", [2]*Reconciled{rc0})
		if _, err := p.d[0].Witness(c1); err != nil {
			t.Fatal(err)
		}
		p.restart(1, nil)
		noRollback(t, "party 1 restarted between the Reconciles", p.session(0, "after the crash"))
		p.round()
	})
	t.Run("random", func(t *testing.T) {
		// Random rounds, one-sided submissions and deliveries, and crashes
		// of either module (or both), also in the middle of witness
		// exchanges: no rollback may ever be reported.
		p := newBoltPairWindow(t, 16)
		rng := rand.New(rand.NewPCG(20, 1))
		dirty := false // out of lockstep: a round needs an exchange first
		session := func(what string) {
			noRollback(t, what, p.session(0, what))
			dirty = false
		}
		for i := range 400 {
			what := fmt.Sprintf("step %d", i)
			locked := p.d[0].Locked() || p.d[1].Locked()
			switch k := rng.IntN(10); {
			case k < 3:
				if dirty || locked {
					session(what)
				}
				p.round()
			case k < 5:
				if locked || dirty && k == 4 {
					session(what)
				}
				if k == 3 {
					p.ahead(rng.IntN(2), 1+rng.IntN(40))
				} else {
					p.half(rng.IntN(2))
				}
				dirty = true
			case k < 7:
				p.restart(rng.IntN(2), nil)
			case k < 8:
				session(what)
			default:
				// A crash at a random step of the exchange (the party
				// daemons' order).
				stop, victim := rng.IntN(5), rng.IntN(2)
				var c, w [2][]byte
				var rc0 *Reconciled
				var err error
				steps := []func(){
					func() { c[0], err = p.d[0].Challenge() },
					func() { c[1], err = p.d[1].Challenge(); w[1], err = p.d[1].Witness(c[0]) },
					func() { rc0, err = p.d[0].Reconcile(w[1]) },
					func() { w[0], err = p.d[0].Witness(c[1]) },
					func() { _, err = p.d[1].Reconcile(w[0]) },
				}
				for s := 0; s < stop; s++ {
					if steps[s](); err != nil {
						t.Fatalf("%s: exchange step %d: %v", what, s, err)
					}
				}
				noRollback(t, what+" (interrupted exchange)", [2]*Reconciled{rc0, nil})
				p.restart(victim, nil)
				dirty = true
			}
		}
	})
}

// TestRestoreDetected: a module whose state file is set back below what
// its peer accepted from it is still caught, with a reservation window,
// whichever party it is, and even when the peer itself restarted since
// (its accepted mark resumes at its last commit).
func TestRestoreDetected(t *testing.T) {
	for victim := 0; victim < 2; victim++ {
		for _, peerRestart := range []bool{false, true} {
			t.Run(fmt.Sprintf("party %d, peer restarted %v", victim, peerRestart), func(t *testing.T) {
				p := newBoltPairWindow(t, 16)
				for range 2 {
					p.round()
				}
				old := p.copyFile(victim)
				p.restart(victim, nil)
				p.session(0, "after the copy")
				for range 12 {
					p.round()
				}
				if peerRestart {
					p.restart(1-victim, nil)
					p.session(0, "peer restarted")
					for range 4 {
						p.round()
					}
				}
				p.restart(victim, old)
				rc := p.session(0, "restored")
				if !rc[victim].RolledBack || rc[1-victim].RolledBack {
					t.Fatalf("restored party %d: reconciled %+v and %+v", victim, *rc[0], *rc[1])
				}
				if rc[0].Next != rc[1].Next {
					t.Fatalf("resynchronised to %d and %d", rc[0].Next, rc[1].Next)
				}
				p.round()
			})
		}
	}
}

// TestWitnessOldSize: a witness of the format before the accepted mark
// (8 bytes shorter) is refused with a message naming the version mismatch.
func TestWitnessOldSize(t *testing.T) {
	p := newBoltPair(t)
	c0, _ := p.d[0].Challenge()
	if _, err := p.d[1].Challenge(); err != nil {
		t.Fatal(err)
	}
	w1, err := p.d[1].Witness(c0)
	if err != nil {
		t.Fatal(err)
	}
	old := append(w1[:witnessBody-9:witnessBody-9], make([]byte, 32)...)
	if len(old) != 104 {
		t.Fatalf("old witness of %d bytes", len(old))
	}
	if _, err = p.d[0].Reconcile(old); !errors.Is(err, ErrWitness) || !strings.Contains(err.Error(), "same kord version") {
		t.Fatalf("an old-format witness: %v", err)
	}
}

// TestWitnessOtherVersion: a witness of module protocol 1 (112 bytes, no
// version byte) or of another stated version is refused with a message
// naming both versions and what to do; the module stays locked.
func TestWitnessOtherVersion(t *testing.T) {
	p := newBoltPair(t)
	for name, mangle := range map[string]func(w []byte) []byte{
		"protocol 1": func(w []byte) []byte {
			v1 := append([]byte(nil), w[:len(witnessMagic)]...)
			return append(v1, w[len(witnessMagic)+1:]...)
		},
		"protocol 3": func(w []byte) []byte {
			w = append([]byte(nil), w...)
			w[len(witnessMagic)] = 3
			return w
		},
	} {
		c0, _ := p.d[0].Challenge()
		if _, err := p.d[1].Challenge(); err != nil {
			t.Fatal(err)
		}
		w1, err := p.d[1].Witness(c0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.d[0].Reconcile(mangle(w1))
		if !errors.Is(err, ErrWitness) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "Upgrading a pair") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
