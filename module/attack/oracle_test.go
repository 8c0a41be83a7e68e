package attack

import (
	"context"
	"testing"

	"github.com/kord-fss/kord/module/msg"
)

// TestOracleControl shows the attack works when refused shares are
// reused: it recovers every α's low ℓ−1 bits on the keystream tier. Were
// the harness unable to see the oracle, the tests below could not fail.
func TestOracleControl(t *testing.T) {
	r, err := Oracle(context.Background(), msg.Keystream, Reuse, 16, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Recovered != r.Alphas || r.Outcomes != 15*r.Alphas {
		t.Fatalf("control attack on reused shares: %+v, want every α recovered from 15 outcomes", r)
	}
}

// TestOracleKeystreamBurn: under kord's rule the attacker gets at most one
// tamper outcome per α and recovers none.
func TestOracleKeystreamBurn(t *testing.T) {
	r, err := Oracle(context.Background(), msg.Keystream, Burn, 16, 32, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.Leaks() || r.MaxOutcomesPerAlpha != 1 || r.Recovered != 0 {
		t.Fatalf("keystream tier, burn rule: %+v", r)
	}
}

// TestOracleAuthenticated: on the mac tiers every tampered frame is refused
// before anything is rebuilt, so even an honest host that submits the same
// shares again (which an authentication failure allows) gives no outcome.
func TestOracleAuthenticated(t *testing.T) {
	for _, tier := range []msg.Tier{msg.MAC, msg.BatchMAC} {
		r, err := Oracle(context.Background(), tier, Reuse, 16, 8, 3)
		if err != nil {
			t.Fatal(err)
		}
		if r.Outcomes != 0 || r.Rejected != r.Probes || r.Probes != 15*r.Alphas {
			t.Fatalf("%v: %+v, want every probe refused and no outcome", tier, r)
		}
	}
}
