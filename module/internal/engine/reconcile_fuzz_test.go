package engine

import (
	"bytes"
	"testing"

	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/store"
)

// memPairing is an in-memory PairingStore.
type memPairing struct {
	store.Mem
	p *store.Pairing
}

func (m *memPairing) SavePairing(p store.Pairing) error {
	c := p
	c.Secret = bytes.Clone(p.Secret)
	m.p = &c
	return m.Save(store.Counters{})
}

func (m *memPairing) LoadPairing() (*store.Pairing, error) {
	if m.p == nil {
		return nil, nil
	}
	c := *m.p
	c.Secret = bytes.Clone(m.p.Secret)
	return &c, nil
}

// durablePair pairs two durable modules and restarts them from their
// stores, so both are locked until they reconcile.
func durablePair(t testing.TB) [2]*Durable {
	t.Helper()
	var st [2]*memPairing
	var d [2]*Durable
	for b := 0; b < 2; b++ {
		st[b] = &memPairing{}
		var err error
		if d[b], err = OpenDurable(Config{Party: b, Secret: []byte("provisioning-secret-0123"), Store: st[b]}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := d[0].Provision(ctx, &msg.ProvisionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; len(r.Message) > 0; i++ {
		if r, err = d[1-i%2].Provision(ctx, &msg.ProvisionRequest{Message: r.Message}); err != nil {
			t.Fatal(err)
		}
	}
	for b := 0; b < 2; b++ {
		if d[b], err = OpenDurable(Config{Party: b, Store: st[b]}); err != nil {
			t.Fatal(err)
		}
		if !d[b].Locked() {
			t.Fatal("a restarted module is not locked")
		}
	}
	return d
}

// FuzzReconcile feeds arbitrary bytes as the peer's counter witness. No
// panic; only the peer's genuine witness over the outstanding challenge
// unlocks the module or moves its counters.
func FuzzReconcile(f *testing.F) {
	d := durablePair(f)
	c, err := d[0].Challenge()
	if err != nil {
		f.Fatal(err)
	}
	if _, err := d[1].Challenge(); err != nil {
		f.Fatal(err)
	}
	w, err := d[1].Witness(c)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(w)
	f.Add(w[:len(w)-1])
	own, _ := d[0].Witness(c)
	f.Add(own) // reflection of this module's own witness
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := d[0].Challenge()
		if err != nil {
			t.Fatal(err)
		}
		genuine, err := d[1].Witness(c)
		if err != nil {
			t.Fatal(err)
		}
		before := state(d[0].Engine)
		if _, err := d[0].Reconcile(data); err == nil {
			if !bytes.Equal(data, genuine) {
				t.Fatal("a forged witness was accepted")
			}
			return
		}
		if !d[0].Locked() || state(d[0].Engine) != before || d[0].ch != nil {
			t.Fatal("a rejected witness unlocked the module, moved its counters or gave it frame keys")
		}
		if _, err := d[0].Reconcile(genuine); err == nil {
			t.Fatal("a witness was accepted without a fresh challenge")
		}
	})
}
