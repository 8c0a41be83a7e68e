package module_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/moduletest"
	"github.com/kord-fss/kord/module/msg"
)

func newDev(t *testing.T, party int, secret, kem string) module.Device {
	t.Helper()
	return moduletest.Software(t, party, []byte(secret), kem)
}

const secret = "0123456789abcdef-provisioning"

// TestPairingEveryKEM pairs with each registered KEM and makes one key.
func TestPairingEveryKEM(t *testing.T) {
	ctx := context.Background()
	kems := module.KEMs()
	for _, want := range []string{"mlkem768", "ntru-ees1087ep1", "ntru-ees1499ep1"} {
		if !slices.Contains(kems, want) {
			t.Errorf("KEM %s not registered (have %v)", want, kems)
		}
	}
	for _, kem := range kems {
		d0, d1 := newDev(t, 0, secret, kem), newDev(t, 1, secret, kem)
		if err := module.Pair(ctx, d0, d1); err != nil {
			t.Fatalf("%s: %v", kem, err)
		}
		for _, d := range []module.Device{d0, d1} {
			p, _ := d.Poll(ctx, &msg.PollRequest{})
			if !p.Paired || p.KEM != kem || p.NextCounter != 0 || p.PeerFloor != 0 {
				t.Fatalf("%s: %+v", kem, p)
			}
		}
	}
}

// TestPairingWrongSecret: modules without the same provisioning secret do
// not pair, and neither accepts key requests.
func TestPairingWrongSecret(t *testing.T) {
	ctx := context.Background()
	d0, d1 := newDev(t, 0, secret, ""), newDev(t, 1, "another-secret-of-16+", "")
	if err := module.Pair(ctx, d0, d1); err == nil {
		t.Fatal("paired under different provisioning secrets")
	}
	for _, d := range []module.Device{d0, d1} {
		p, _ := d.Poll(ctx, &msg.PollRequest{})
		if p.Paired {
			t.Fatal("a module claims to be paired")
		}
		_, err := d.Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC,
			Shares: []msg.Share{{Mode: msg.Bound, Type: 1, InBits: 8, OutBits: 8}}})
		if !errors.Is(err, module.ErrNotPaired) {
			t.Fatalf("want ErrNotPaired, got %v", err)
		}
	}
}

// TestPairingTamperedRelay: a host that alters any pairing message byte
// breaks the pairing.
func TestPairingTamperedRelay(t *testing.T) {
	ctx := context.Background()
	for step := 0; step < 3; step++ {
		for _, pos := range []int{0, 5, 40, -1} {
			d0, d1 := newDev(t, 0, secret, ""), newDev(t, 1, secret, "")
			r, err := d0.Provision(ctx, &msg.ProvisionRequest{})
			if err != nil {
				t.Fatal(err)
			}
			devs := []module.Device{d1, d0, d1}
			failed := false
			for i := 0; i < 3; i++ {
				m := append([]byte(nil), r.Message...)
				if i == step {
					p := pos
					if p < 0 || p >= len(m) {
						p = len(m) - 1
					}
					m[p] ^= 0x20
				}
				if r, err = devs[i].Provision(ctx, &msg.ProvisionRequest{Message: m}); err != nil {
					failed = true
					break
				}
			}
			p0, _ := d0.Poll(ctx, &msg.PollRequest{})
			p1, _ := d1.Poll(ctx, &msg.PollRequest{})
			if !failed || p0.Paired && p1.Paired {
				t.Fatalf("tampering step %d byte %d went unnoticed", step, pos)
			}
		}
	}
}
