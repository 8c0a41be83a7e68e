package loadgen

import (
	"crypto/rand"
	mrand "math/rand/v2"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
)

func TestClassName(t *testing.T) {
	for k, want := range map[Class]string{
		{Mode: msg.Bound, Tier: msg.MAC, Type: fss.DPF, InBits: 16, OutBits: 16}:         "dpf-16-mac",
		{Mode: msg.Derived, Type: fss.DCF, InBits: 32, OutBits: 32}:                      "dcf-32-derived",
		{Mode: msg.Consume, Tier: msg.Keystream, Type: fss.DCF, InBits: 32, OutBits: 32}: "dcf-32-otp-consume",
		{Mode: msg.Bound, Tier: msg.BatchMAC, Type: fss.DPF, InBits: 8, OutBits: 8}:      "dpf-8-batchmac",
	} {
		if got := k.Name(); got != want {
			t.Errorf("%+v: Name %q, want %q", k, got, want)
		}
	}
}

// TestRequests: bound and consume requests are one key each, derived ones
// up to perDerived; both sites get one request per id, ids from base.
func TestRequests(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(1, 2))
	for _, c := range []struct {
		k          Class
		keys, per  int
		wantNumber int
	}{
		{Class{Mode: msg.Bound, Tier: msg.MAC, Type: fss.DPF, InBits: 16, OutBits: 16}, 10, 64, 10},
		{Class{Mode: msg.Consume, Tier: msg.Keystream, Type: fss.DCF, InBits: 16, OutBits: 16}, 3, 64, 3},
		{Class{Mode: msg.Derived, Type: fss.DCF, InBits: 16, OutBits: 16}, 130, 64, 3},
		{Class{Mode: msg.Derived, Type: fss.DCF, InBits: 16, OutBits: 16}, 130, 13, 10},
	} {
		reqs, truth := RequestsPer(c.k, 7, c.keys, c.per, rng)
		if len(reqs[0]) != c.wantNumber || len(reqs[1]) != c.wantNumber || len(truth) != c.wantNumber {
			t.Fatalf("%s: %d, %d requests and %d truths, want %d", c.k.Name(), len(reqs[0]), len(reqs[1]), len(truth), c.wantNumber)
		}
		for i := range reqs[0] {
			if reqs[0][i].Id != 7+uint64(i) || reqs[1][i].Id != 7+uint64(i) {
				t.Fatalf("%s: request %d has ids %d, %d", c.k.Name(), i, reqs[0][i].Id, reqs[1][i].Id)
			}
		}
		if c.k.Mode == msg.Consume && len(truth[0].Points) == 0 {
			t.Fatalf("%s: no points", c.k.Name())
		}
	}
}

// TestCheckKeys: a pair of the stated (α, β) passes, any other fails.
func TestCheckKeys(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(3, 4))
	p := fss.Params{Type: fss.DCF, InBits: 12, OutBits: 12}
	k0, k1, err := fss.Gen(rand.Reader, p, 100, 5)
	if err != nil {
		t.Fatal(err)
	}
	if !CheckKeys(p, k0, k1, 100, 5, rng) {
		t.Fatal("a correct pair fails")
	}
	if CheckKeys(p, k0, k1, 100, 6, rng) || CheckKeys(p, k0, k1, 101, 5, rng) || CheckKeys(p, k0, nil, 100, 5, rng) {
		t.Fatal("a wrong pair passes")
	}
}
