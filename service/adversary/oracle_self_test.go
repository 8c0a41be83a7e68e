package adversary

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
)

// TestOracleFlags shows that checks (iii) and (iv) fail when they should
// (the fixed attack cases show (i) and (ii)): an α-reusable class for a
// request whose counter the honest module opened, and a request that
// never ended, are violations; the same class with no frame opened is
// not.
func TestOracleFlags(t *testing.T) {
	w := &world{honest: 0}
	w.opens[0] = &opens{set: map[uint64]bool{5: true}}
	o := &oracle{t: t, w: w, quiet: true, delivered: map[uint64]uint64{}, ranges: map[uint64][]rng{1: {{4, 2}}, 2: {{6, 1}}}}
	r := rand.New(rand.NewPCG(1, 2))
	p := fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}
	unmatched := &client.Reply{Err: &client.ReplyError{Class: "unmatched"}}
	o.check(boundReq(r, 1, p), unmatched, nil, 0)
	o.check(boundReq(r, 2, p), unmatched, nil, 0)
	o.check(boundReq(r, 3, p), nil, context.DeadlineExceeded, 0)
	f := o.findings()
	if len(f) != 2 || !strings.HasPrefix(f[0], "(iii) request 1 ") || !strings.HasPrefix(f[1], "(iv) request 3 ") {
		t.Fatalf("findings %q, want (iii) for request 1 and (iv) for request 3", f)
	}
}
