package module_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/moduletest"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/store"
)

// openDurable opens a durable module whose store commits every counter.
func openDurable(t *testing.T, party int, path string) (*module.Durable, *store.Bolt) {
	t.Helper()
	return moduletest.OpenDurable(t, party, path, 1, moduletest.Secret)
}

// exchange runs one bound mac key through both modules.
func exchange(t *testing.T, d [2]*module.Durable) {
	t.Helper()
	ctx := context.Background()
	var fr [2][]byte
	for b := 0; b < 2; b++ {
		r, err := d[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC,
			Shares: []msg.Share{{Mode: msg.Bound, Type: fss.DPF, InBits: 8, OutBits: 8, AlphaShare: 3}}})
		if err != nil {
			t.Fatal(err)
		}
		fr[b] = r.Frames[0]
	}
	for b := 0; b < 2; b++ {
		r, err := d[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitPeerFrame, Frame: fr[1-b]})
		if err != nil || !r.Accepted {
			t.Fatalf("frame: %v %+v", err, r)
		}
	}
}

func witness(t *testing.T, d [2]*module.Durable) [2]*module.Reconciled {
	t.Helper()
	ctx := context.Background()
	c0, _ := d[0].Challenge(ctx)
	c1, _ := d[1].Challenge(ctx)
	w1, err := d[1].Witness(ctx, c0)
	if err != nil {
		t.Fatal(err)
	}
	r0, err := d[0].Reconcile(ctx, w1)
	if err != nil {
		t.Fatal(err)
	}
	w0, _ := d[0].Witness(ctx, c1)
	r1, err := d[1].Reconcile(ctx, w0)
	if err != nil {
		t.Fatal(err)
	}
	return [2]*module.Reconciled{r0, r1}
}

// TestDurableRollbackWitness restores a module's state file from an older
// copy: it restarts locked, refuses key requests, detects the rollback from
// its peer's witness, moves past every counter its peer has seen, and
// works again.
func TestDurableRollbackWitness(t *testing.T) {
	dir := t.TempDir()
	p0, p1 := filepath.Join(dir, "m0.db"), filepath.Join(dir, "m1.db")
	var d [2]*module.Durable
	var st [2]*store.Bolt
	d[0], st[0] = openDurable(t, 0, p0)
	d[1], st[1] = openDurable(t, 1, p1)
	defer func() { st[1].Close() }()
	if err := module.Pair(context.Background(), d[0], d[1]); err != nil {
		t.Fatal(err)
	}
	exchange(t, d)
	st[0].Close()
	old, err := os.ReadFile(p0)
	if err != nil {
		t.Fatal(err)
	}
	d[0], st[0] = openDurable(t, 0, p0)
	witness(t, d)
	for range 5 {
		exchange(t, d)
	}
	floor1, _ := d[1].Poll(context.Background(), nil)
	st[0].Close()
	os.WriteFile(p0, old, 0o600)
	d[0], st[0] = openDurable(t, 0, p0)
	defer func() { st[0].Close() }()
	if !d[0].Locked() {
		t.Fatal("a restored module must start locked")
	}
	_, err = d[0].Submit(context.Background(), &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC,
		Shares: []msg.Share{{Mode: msg.Bound, Type: fss.DPF, InBits: 8, OutBits: 8}}})
	if !errors.Is(err, module.ErrLocked) {
		t.Fatalf("locked module accepted shares: %v", err)
	}
	// A correlation draws at the counters too: refused alike, nothing
	// drawn before the witness moves them forward.
	_, err = d[0].Submit(context.Background(), &msg.SubmitRequest{Kind: msg.SubmitCorrelation,
		Corr: &msg.Correlation{Kind: msg.CorrMatVec, Ring: 16, In: 2, Out: 2}})
	if !errors.Is(err, module.ErrLocked) {
		t.Fatalf("locked module accepted a correlation: %v", err)
	}
	rc := witness(t, d)
	if !rc[0].RolledBack {
		t.Fatal("rollback not detected")
	}
	if rc[0].Next < floor1.PeerFloor || rc[0].Next != rc[1].Next {
		t.Fatalf("resync to %d/%d, peer floor was %d", rc[0].Next, rc[1].Next, floor1.PeerFloor)
	}
	exchange(t, d)
}

// TestCollectRangeRepeats: CollectRange hands out the same outputs as
// Collect, in order; repeating it, or a Collect of one of its counters,
// returns the same bytes; a counter with no output stops it with an error.
func TestCollectRangeRepeats(t *testing.T) {
	d := moduletest.DurablePair(t, 1)
	ctx := context.Background()
	const n = 5
	alpha, beta := uint64(77), uint64(9)
	var first uint64
	var fr [2][][]byte
	for b := 0; b < 2; b++ {
		var shares []msg.Share
		for range n {
			s := msg.Share{Mode: msg.Bound, Type: fss.DCF, InBits: 8, OutBits: 8}
			if b == 1 {
				s.AlphaShare, s.BetaShare = alpha, beta
			}
			shares = append(shares, s)
		}
		r, err := d[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.Keystream, Shares: shares})
		if err != nil {
			t.Fatal(err)
		}
		fr[b], first = r.Frames, r.FirstCounter
	}
	for b := 0; b < 2; b++ {
		for _, f := range fr[1-b] {
			if r, err := d[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitPeerFrame, Frame: f}); err != nil || !r.Accepted {
				t.Fatalf("frame: %v %+v", err, r)
			}
		}
	}
	var keys [2][][]byte
	for b := 0; b < 2; b++ {
		for rep := 0; rep < 2; rep++ {
			var got [][]byte
			err := d[b].CollectRange(ctx, first, n, nil, func(r *msg.CollectResponse) {
				if r.Counter != first+uint64(len(got)) {
					t.Errorf("counter %d out of order", r.Counter)
				}
				got = append(got, slices.Clone(r.Key))
			})
			if err != nil || len(got) != n {
				t.Fatalf("party %d, pass %d: %d outputs, %v", b, rep, len(got), err)
			}
			if rep == 0 {
				keys[b] = got
			} else {
				for i := range got {
					if !bytes.Equal(got[i], keys[b][i]) {
						t.Fatalf("party %d: a repeated CollectRange returned other bytes at %d", b, i)
					}
				}
			}
		}
		one, err := d[b].Collect(ctx, &msg.CollectRequest{Counter: first + 2})
		if err != nil || !bytes.Equal(one.Key, keys[b][2]) {
			t.Fatalf("party %d: Collect after CollectRange: %v", b, err)
		}
		if err := d[b].CollectRange(ctx, first+n-1, 2, nil, func(*msg.CollectResponse) {}); err == nil {
			t.Fatalf("party %d: a counter with no output was collected", b)
		}
	}
	for i := range n {
		k0, err0 := fss.ParseKey(keys[0][i])
		k1, err1 := fss.ParseKey(keys[1][i])
		if err0 != nil || err1 != nil {
			t.Fatal(err0, err1)
		}
		if err := fss.CheckPair(k0, k1, alpha, beta, alpha-1, alpha, alpha+1); err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
	}
}

// TestPeerRestartIsNoRollback: a module that crashes and restarts resumes at
// its reserved marks, a window ahead; the module that kept running must not
// mistake that for a rollback of its own state (it did, and raised the
// rollback alarm on the healthy site), and the restarted one is no rollback
// either.
func TestPeerRestartIsNoRollback(t *testing.T) {
	dir := t.TempDir()
	open := func(party int) (*module.Durable, *store.Bolt) {
		return moduletest.OpenDurable(t, party, filepath.Join(dir, fmt.Sprintf("w%d.db", party)), 16, moduletest.Secret)
	}
	var d [2]*module.Durable
	var st [2]*store.Bolt
	d[0], st[0] = open(0)
	d[1], st[1] = open(1)
	defer func() { st[0].Close(); st[1].Close() }()
	if err := module.Pair(context.Background(), d[0], d[1]); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		exchange(t, d)
	}
	st[1].Close()
	d[1], st[1] = open(1)
	if !d[1].Locked() {
		t.Fatal("a restarted module must start locked")
	}
	rc := witness(t, d)
	if rc[0].RolledBack || rc[1].RolledBack {
		t.Fatalf("a crash restart was reported as a rollback: %+v %+v", rc[0], rc[1])
	}
	if rc[0].Next != rc[1].Next {
		t.Fatalf("resync to %d and %d", rc[0].Next, rc[1].Next)
	}
	exchange(t, d)
}

// TestNoRecollect: a durable module opened with NoRecollect hands each
// output out once: a derived bulk's slab is the module's own (its keys
// pair with the peer's), a bound range collect works once, and a repeat
// of either is refused (no re-collect window) with nothing handed out.
func TestNoRecollect(t *testing.T) {
	ctx := context.Background()
	var d [2]*module.Durable
	for b := range 2 {
		m, err := module.OpenDurable(module.Config{Party: b, Secret: moduletest.Secret, Store: &store.MemPairing{}, NoRecollect: true})
		if err != nil {
			t.Fatal(err)
		}
		d[b] = m
	}
	moduletest.Pair(t, d[0], d[1])
	witness(t, d)
	const n = 16
	p := fss.Params{Type: fss.DCF, InBits: 16, OutBits: 16}
	bulk := &msg.Bulk{Mode: msg.Derived, Type: p.Type, InBits: p.InBits, OutBits: p.OutBits, N: n, Beta: 5}
	var slabs [2]*msg.Slab
	for b := range 2 {
		r, err := d[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitBulk, Bulk: bulk})
		if err != nil {
			t.Fatal(err)
		}
		c, err := d[b].Collect(ctx, &msg.CollectRequest{Counter: r.FirstCounter, Count: n})
		if err != nil || c.Slab == nil || c.Slab.N != n {
			t.Fatalf("party %d: slab collect: %v", b, err)
		}
		slabs[b] = c.Slab
		if _, err := d[b].Collect(ctx, &msg.CollectRequest{Counter: r.FirstCounter, Count: n}); !errors.Is(err, module.ErrBadRequest) {
			t.Fatalf("party %d: a repeated slab collect: %v, want refused", b, err)
		}
		called := false
		if err := d[b].CollectSlab(ctx, r.FirstCounter, n, func(*msg.Slab) { called = true }); err == nil || called {
			t.Fatalf("party %d: a repeated CollectSlab: %v (emitted %v), want refused", b, err, called)
		}
	}
	for i := range n {
		k0, err0 := fss.ParseKey(slabs[0].Key(i))
		k1, err1 := fss.ParseKey(slabs[1].Key(i))
		if err0 != nil || err1 != nil {
			t.Fatal(err0, err1)
		}
		alpha := (slabs[0].AlphaShares[i] + slabs[1].AlphaShares[i]) & 0xffff
		if err := fss.CheckPair(k0, k1, alpha, 5, alpha-1, alpha, alpha+1); err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
	}
	for b := range 2 {
		d[b].Recycle(slabs[b])
	}
	// Bound, per key: one range collect each, then refused.
	var fr [2][][]byte
	var first uint64
	for b := range 2 {
		s := msg.Share{Mode: msg.Bound, Type: fss.DPF, InBits: 8, OutBits: 8, AlphaShare: uint64(3 * b), BetaShare: uint64(b)}
		r, err := d[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.Keystream, Shares: []msg.Share{s, s}})
		if err != nil {
			t.Fatal(err)
		}
		fr[b], first = r.Frames, r.FirstCounter
	}
	for b := range 2 {
		for _, f := range fr[1-b] {
			if r, err := d[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitPeerFrame, Frame: f}); err != nil || !r.Accepted {
				t.Fatalf("frame: %v %+v", err, r)
			}
		}
	}
	var keys [2][][]byte
	for b := range 2 {
		if err := d[b].CollectRange(ctx, first, 2, nil, func(r *msg.CollectResponse) { keys[b] = append(keys[b], slices.Clone(r.Key)) }); err != nil {
			t.Fatal(err)
		}
		if err := d[b].CollectRange(ctx, first, 2, nil, func(*msg.CollectResponse) { t.Fatal("a repeated range collect emitted") }); err == nil {
			t.Fatalf("party %d: a repeated range collect was not refused", b)
		}
	}
	for i := range 2 {
		k0, _ := fss.ParseKey(keys[0][i])
		k1, err := fss.ParseKey(keys[1][i])
		if err != nil {
			t.Fatal(err)
		}
		if err := fss.CheckPair(k0, k1, 3, 1, 2, 3, 4); err != nil {
			t.Fatalf("bound key %d: %v", i, err)
		}
	}
}
