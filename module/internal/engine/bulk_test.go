package engine

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/internal/kdf"
	"github.com/kord-fss/kord/module/msg"
)

func bulkSubmit(t testing.TB, e *Engine, tier msg.Tier, b msg.Bulk) *msg.SubmitResponse {
	t.Helper()
	r, err := e.Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitBulk, Tier: tier, Bulk: &b})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func slabOf(t testing.TB, e *Engine, first uint64, n int) *msg.Slab {
	t.Helper()
	r, err := e.Collect(ctx, &msg.CollectRequest{Counter: first, Count: n})
	if err != nil {
		t.Fatal(err)
	}
	if r.Slab == nil {
		t.Fatal("a range collect returned no slab")
	}
	if err := r.Slab.Check(); err != nil {
		t.Fatal(err)
	}
	return r.Slab
}

// checkSlabs checks two parties' slabs against the keys the one-key path
// makes from (α, β): the same roots (kdf.PRF.Roots), so the same bytes,
// and the same pair tags; and that the pairs evaluate to f.
func checkSlabs(t *testing.T, prf0 *Engine, s0, s1 *msg.Slab, alpha, beta []uint64) {
	t.Helper()
	p := s0.Params
	if !bytes.Equal(s0.PairTags, s1.PairTags) {
		t.Fatal("the two slabs' pair tags differ")
	}
	for i := range s0.N {
		c := s0.First + uint64(i)
		r0, r1 := prf0.prf.Roots(c, byte(s0.Mode), byte(p.Type), byte(p.InBits), byte(p.OutBits), alpha[i], beta[i])
		k0, k1, err := fss.GenWithRoots(p, alpha[i], beta[i], r0, r1)
		if err != nil {
			t.Fatal(err)
		}
		w0, _ := k0.MarshalBinary()
		w1, _ := k1.MarshalBinary()
		if !bytes.Equal(w0, s0.Key(i)) || !bytes.Equal(w1, s1.Key(i)) {
			t.Fatalf("key %d: slab bytes differ from Gen with the one-key roots", i)
		}
		var tag [msg.PairTagSize]byte
		prf0.prf.PairTag(c, byte(s0.Mode), byte(p.Type), byte(p.InBits), byte(p.OutBits), alpha[i], beta[i], &tag)
		if !bytes.Equal(tag[:], s0.PairTag(i)) {
			t.Fatalf("key %d: pair tag differs from the one-key tag", i)
		}
		if err := fss.CheckPair(k0, k1, alpha[i], beta[i], alpha[i], (alpha[i]+1)&prg.Mask(p.InBits)); err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
	}
}

func TestBulkDerived(t *testing.T) {
	for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
		for _, deriveBeta := range []bool{true, false} {
			e := pair(t)
			submit(t, e[0], msg.MAC, msg.Share{Mode: msg.Derived, Type: typ, InBits: 9, OutBits: 9}) // counters not at 0
			submit(t, e[1], msg.MAC, msg.Share{Mode: msg.Derived, Type: typ, InBits: 9, OutBits: 9})
			b := msg.Bulk{Mode: msg.Derived, Type: typ, InBits: 20, OutBits: 13, N: 70, DeriveBeta: deriveBeta}
			if !deriveBeta {
				b.Beta = 77
			}
			before := state(e[0])
			r0 := bulkSubmit(t, e[0], 0, b)
			r1 := bulkSubmit(t, e[1], 0, b)
			if r0.FirstCounter != 1 || r0.Count != 70 || r1.FirstCounter != 1 || len(r0.Frames) != 0 {
				t.Fatalf("derived bulk answered %+v", r0)
			}
			after := state(e[0])
			if after.next != before.next+70 || after.gen != before.gen+70 || after.ready != before.ready+70 {
				t.Fatalf("counters %+v → %+v", before, after)
			}
			s0, s1 := slabOf(t, e[0], 1, 70), slabOf(t, e[1], 1, 70)
			alpha, beta := make([]uint64, 70), make([]uint64, 70)
			for i := range alpha {
				alpha[i] = (s0.AlphaShares[i] + s1.AlphaShares[i]) & prg.Mask(20)
				beta[i] = (s0.BetaShares[i] + s1.BetaShares[i]) & prg.Mask(13)
				if !deriveBeta && beta[i] != 77 {
					t.Fatal("public β not kept")
				}
				// The same α as the one-key derived path draws.
				a, _, _, _ := e[0].prf.Derived(1+uint64(i), derivedShape(msg.KordV1, typ, 20, 13, 1, deriveBeta))
				if a&prg.Mask(20) != alpha[i] {
					t.Fatal("bulk α differs from the one-key derived α")
				}
			}
			checkSlabs(t, e[0], s0, s1, alpha, beta)
			if _, err := e[0].Collect(ctx, &msg.CollectRequest{Counter: 1, Count: 70}); !errors.Is(err, ErrBadRequest) {
				t.Fatalf("second collect of a slab: %v", err)
			}
			if state(e[0]).ready != before.ready {
				t.Fatal("collected slab still counted ready")
			}
		}
	}
}

func TestBulkBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tier := range []msg.Tier{msg.Keystream, msg.MAC, msg.BatchMAC} {
		for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
			e := pair(t)
			const n = 33
			p := fss.Params{Type: typ, InBits: 17, OutBits: 40}
			alpha, beta := make([]uint64, n), make([]uint64, n)
			var b [2]msg.Bulk
			for x := range 2 {
				b[x] = msg.Bulk{Mode: msg.Bound, Type: typ, InBits: 17, OutBits: 40, N: n,
					AlphaShares: make([]uint64, n), BetaShares: make([]uint64, n)}
			}
			for i := range n {
				alpha[i], beta[i] = rng.Uint64()&prg.Mask(17), rng.Uint64()&prg.Mask(40)
				b[0].AlphaShares[i], b[1].AlphaShares[i] = split(rng, alpha[i], 17)
				b[0].BetaShares[i], b[1].BetaShares[i] = split(rng, beta[i], 40)
			}
			r0 := bulkSubmit(t, e[0], tier, b[0])
			r1 := bulkSubmit(t, e[1], tier, b[1])
			if len(r0.Frames) != 1 || len(r1.Frames) != 1 {
				t.Fatalf("%v: %d and %d frames, want one each", tier, len(r0.Frames), len(r1.Frames))
			}
			if st := state(e[0]); st.pending != n || st.next != n {
				t.Fatalf("%v: after submit %+v", tier, st)
			}
			for x := range 2 {
				peer := []*msg.SubmitResponse{r1, r0}[x]
				r := frame(t, e[x], peer.Frames[0])
				if !r.Accepted || r.FirstCounter != 0 || r.Count != n {
					t.Fatalf("%v: honest bulk frame: %+v", tier, r)
				}
			}
			st := state(e[0])
			if st.pending != 0 || st.ready != n || st.floor != n || st.gen != n {
				t.Fatalf("%v: after frame %+v", tier, st)
			}
			s0, s1 := slabOf(t, e[0], 0, n), slabOf(t, e[1], 0, n)
			if len(s0.AlphaShares) != 0 || len(s0.BetaShares) != 0 || s0.Params != p {
				t.Fatal("bound slab carries shares or the wrong shape")
			}
			checkSlabs(t, e[0], s0, s1, alpha, beta)
		}
	}
}

// TestBulkFrameRejected: a tampered, short or replayed bulk frame is
// rejected whole, moves nothing, and the honest frame still opens.
func TestBulkFrameRejected(t *testing.T) {
	for _, tier := range []msg.Tier{msg.Keystream, msg.MAC, msg.BatchMAC} {
		e := pair(t)
		b := msg.Bulk{Mode: msg.Bound, Type: fss.DPF, InBits: 8, OutBits: 8, N: 4,
			AlphaShares: []uint64{1, 2, 3, 4}, BetaShares: []uint64{5, 6, 7, 8}}
		r0 := bulkSubmit(t, e[0], tier, b)
		bulkSubmit(t, e[1], tier, b)
		f := r0.Frames[0]
		bad := [][]byte{f[:len(f)-1], append(bytes.Clone(f), 0), {}}
		if tier != msg.Keystream {
			x := bytes.Clone(f)
			x[len(x)-1] ^= 1
			bad = append(bad, x)
		}
		for _, fr := range bad {
			before := state(e[1])
			if r := frame(t, e[1], fr); r.Accepted {
				t.Fatalf("%v: bad bulk frame accepted", tier)
			}
			if state(e[1]) != before {
				t.Fatalf("%v: a rejected bulk frame moved state", tier)
			}
		}
		if !frame(t, e[1], f).Accepted {
			t.Fatalf("%v: honest frame rejected after bad ones", tier)
		}
		if r := frame(t, e[1], f); r.Accepted {
			t.Fatalf("%v: replayed frame accepted", tier)
		}
	}
}

// TestBulkBadRequest: every malformed bulk request is refused with
// ErrBadRequest naming the field, and no counter moves.
func TestBulkBadRequest(t *testing.T) {
	e := pair(t)
	ok := func() msg.Bulk {
		return msg.Bulk{Mode: msg.Bound, Type: fss.DCF, InBits: 8, OutBits: 8, N: 2,
			AlphaShares: []uint64{1, 2}, BetaShares: []uint64{3, 4}}
	}
	cases := []struct {
		field string
		tier  msg.Tier
		mod   func(*msg.Bulk)
		req   func(*msg.SubmitRequest)
	}{
		{"Bulk.N", msg.MAC, func(b *msg.Bulk) { b.N, b.AlphaShares, b.BetaShares = 0, nil, nil }, nil},
		{"Bulk.N", msg.MAC, func(b *msg.Bulk) {
			b.N = msg.MaxBulk + 1
			b.AlphaShares, b.BetaShares = make([]uint64, b.N), make([]uint64, b.N)
		}, nil},
		{"Bulk.AlphaShares", msg.MAC, func(b *msg.Bulk) { b.AlphaShares = b.AlphaShares[:1] }, nil},
		{"Bulk.BetaShares", msg.MAC, func(b *msg.Bulk) { b.BetaShares = append(b.BetaShares, 1) }, nil},
		{"Bulk.AlphaShares[1]", msg.MAC, func(b *msg.Bulk) { b.AlphaShares[1] = 256 }, nil},
		{"Bulk.BetaShares[0]", msg.MAC, func(b *msg.Bulk) { b.BetaShares[0] = 1 << 9 }, nil},
		{"Bulk.Type", msg.MAC, func(b *msg.Bulk) { b.Type = 9 }, nil},
		{"Bulk.InBits", msg.MAC, func(b *msg.Bulk) { b.InBits = 65 }, nil},
		{"Bulk.OutBits", msg.MAC, func(b *msg.Bulk) { b.OutBits = 0 }, nil},
		{"Bulk.Mode", msg.MAC, func(b *msg.Bulk) { b.Mode = msg.Consume }, nil},
		{"Bulk.Mode", msg.MAC, func(b *msg.Bulk) { b.Mode = 0 }, nil},
		{"Bulk.DeriveBeta/Beta", msg.MAC, func(b *msg.Bulk) { b.Beta = 1 }, nil},
		{"Bulk.AlphaShares/BetaShares", 0, func(b *msg.Bulk) { b.Mode = msg.Derived }, nil},
		{"Bulk.Beta", 0, func(b *msg.Bulk) {
			b.Mode, b.AlphaShares, b.BetaShares, b.DeriveBeta, b.Beta = msg.Derived, nil, nil, true, 1
		}, nil},
		{"Tier", 7, func(b *msg.Bulk) {}, nil},
		{"Bulk:", msg.MAC, nil, nil},
		{"Shares/Frame", msg.MAC, func(b *msg.Bulk) {}, func(r *msg.SubmitRequest) { r.Shares = []msg.Share{{}} }},
	}
	for _, c := range cases {
		before := state(e[0])
		req := &msg.SubmitRequest{Kind: msg.SubmitBulk, Tier: c.tier}
		if c.mod != nil {
			b := ok()
			c.mod(&b)
			req.Bulk = &b
		}
		if c.req != nil {
			c.req(req)
		}
		_, err := e[0].Submit(ctx, req)
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: got %v", c.field, err)
		}
		if state(e[0]) != before {
			t.Errorf("%s: a refused bulk moved state", c.field)
		}
	}
	// Collects that name no bulk, or a bulk partly.
	bulkSubmit(t, e[0], 0, msg.Bulk{Mode: msg.Derived, Type: fss.DPF, InBits: 8, OutBits: 8, N: 3, DeriveBeta: true})
	for _, c := range []struct {
		req   msg.CollectRequest
		field string
	}{
		{msg.CollectRequest{Counter: 0, Count: 2}, "Count"},
		{msg.CollectRequest{Counter: 1, Count: 3}, "Counter"},
		{msg.CollectRequest{Counter: 0, Count: -1}, "Count"},
		{msg.CollectRequest{Counter: 0, Count: 3, Points: []uint64{1}}, "Points"},
	} {
		before := state(e[0])
		if _, err := e[0].Collect(ctx, &c.req); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("collect %+v: got %v", c.req, err)
		}
		if state(e[0]) != before {
			t.Errorf("collect %+v moved state", c.req)
		}
	}
	slabOf(t, e[0], 0, 3)
}

// TestBulkAbandon: an abandon drops pending bulk shares and uncollected
// slabs, and the counters are never reused.
func TestBulkAbandon(t *testing.T) {
	e := pair(t)
	bulkSubmit(t, e[0], 0, msg.Bulk{Mode: msg.Derived, Type: fss.DPF, InBits: 8, OutBits: 8, N: 3, DeriveBeta: true})
	bulkSubmit(t, e[0], msg.MAC, msg.Bulk{Mode: msg.Bound, Type: fss.DPF, InBits: 8, OutBits: 8, N: 2,
		AlphaShares: []uint64{1, 2}, BetaShares: []uint64{3, 4}})
	r, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: 4})
	if err != nil || r.Count != 5 {
		t.Fatalf("abandon: %v, %+v", err, r)
	}
	st := state(e[0])
	if st.pending != 0 || st.ready != 0 || st.next != 5 {
		t.Fatalf("after abandon %+v", st)
	}
	if _, err := e[0].Collect(ctx, &msg.CollectRequest{Counter: 0, Count: 3}); !errors.Is(err, ErrBadRequest) {
		t.Fatal("abandoned slab collected")
	}
}

// TestBulkRecollect: a durable module gives a repeat range collect the
// same bytes, and keeps at least collectCache keys for it.
func TestBulkRecollect(t *testing.T) {
	d := durablePair(t)
	unlock(t, d)
	b := msg.Bulk{Mode: msg.Derived, Type: fss.DPF, InBits: 10, OutBits: 10, N: 1000, DeriveBeta: true}
	var firsts []uint64
	var first0 []byte
	for range 12 {
		r, err := d[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitBulk, Bulk: &b})
		if err != nil {
			t.Fatal(err)
		}
		c, err := d[0].Collect(ctx, &msg.CollectRequest{Counter: r.FirstCounter, Count: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if first0 == nil {
			first0 = bytes.Clone(c.Slab.Keys)
		}
		again, err := d[0].Collect(ctx, &msg.CollectRequest{Counter: r.FirstCounter, Count: 1000})
		if err != nil || !bytes.Equal(again.Slab.Keys, c.Slab.Keys) || !slices.Equal(again.Slab.AlphaShares, c.Slab.AlphaShares) {
			t.Fatalf("repeat collect differs: %v", err)
		}
		c.Slab.Wipe() // the caller's copy; the module's stays
		firsts = append(firsts, r.FirstCounter)
	}
	// The last collectCache keys are all still there.
	for _, f := range firsts[len(firsts)-(collectCache+999)/1000:] {
		if _, err := d[0].Collect(ctx, &msg.CollectRequest{Counter: f, Count: 1000}); err != nil {
			t.Fatalf("recent slab at %d forgotten: %v", f, err)
		}
	}
	if _, err := d[0].Collect(ctx, &msg.CollectRequest{Counter: firsts[0], Count: 1000}); err == nil {
		t.Fatal("the oldest slab is remembered past the window")
	}
}

func unlock(t testing.TB, d [2]*Durable) {
	t.Helper()
	var c [2][]byte
	for b := range 2 {
		var err error
		if c[b], err = d[b].Challenge(); err != nil {
			t.Fatal(err)
		}
	}
	var w [2][]byte
	for b := range 2 {
		var err error
		if w[b], err = d[b].Witness(c[1-b]); err != nil {
			t.Fatal(err)
		}
	}
	for b := range 2 {
		if _, err := d[b].Reconcile(w[1-b]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBulkRecycle: slabs given back serve later bulks, whose keys are
// still right (every byte rewritten), and a recycled slab is wiped.
func TestBulkRecycle(t *testing.T) {
	e := pair(t)
	var old *msg.Slab
	for round := range 4 {
		n := 50 - 10*round // smaller each time: the recycled buffers fit
		b := msg.Bulk{Mode: msg.Derived, Type: fss.DCF, InBits: 16, OutBits: 16, N: n, DeriveBeta: true}
		r := bulkSubmit(t, e[0], 0, b)
		bulkSubmit(t, e[1], 0, b)
		s0, s1 := slabOf(t, e[0], r.FirstCounter, n), slabOf(t, e[1], r.FirstCounter, n)
		if round > 0 && s0 != old {
			t.Fatal("a recycled slab was not reused")
		}
		alpha, beta := make([]uint64, n), make([]uint64, n)
		for i := range alpha {
			alpha[i] = (s0.AlphaShares[i] + s1.AlphaShares[i]) & prg.Mask(16)
			beta[i] = (s0.BetaShares[i] + s1.BetaShares[i]) & prg.Mask(16)
		}
		checkSlabs(t, e[0], s0, s1, alpha, beta)
		keys := s0.Keys
		e[0].Recycle(s0)
		e[1].Recycle(s1)
		for _, x := range keys {
			if x != 0 {
				t.Fatal("a recycled slab was not wiped")
			}
		}
		old = s0
	}
}

// TestBulkPinned: a slab pinned by CollectSlabPinned stays whole while
// later collects push it out of the re-collect window (unpinned ones are
// recycled meanwhile), and its release wipes it then; releasing twice
// does nothing more.
func TestBulkPinned(t *testing.T) {
	d := durablePair(t)
	unlock(t, d)
	b := msg.Bulk{Mode: msg.Derived, Type: fss.DPF, InBits: 10, OutBits: 10, N: 1000, DeriveBeta: true}
	submit := func() uint64 {
		r, err := d[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitBulk, Bulk: &b})
		if err != nil {
			t.Fatal(err)
		}
		return r.FirstCounter
	}
	var pinned *msg.Slab
	var want []byte
	release, err := d[0].CollectSlabPinned(submit(), 1000, func(s *msg.Slab) { pinned, want = s, bytes.Clone(s.Keys) })
	if err != nil || pinned == nil {
		t.Fatal(err)
	}
	for range 12 { // both fall out of the window
		f := submit()
		if err := d[0].CollectSlab(f, 1000, nil, nil, 0, func(*msg.Slab) {}); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(pinned.Keys, want) {
		t.Fatal("a pinned slab changed before its release")
	}
	keys := pinned.Keys
	release()
	if slices.ContainsFunc(keys, func(x byte) bool { return x != 0 }) {
		t.Fatal("a released slab out of the window was not wiped")
	}
	release()
	if len(d[0].pins) != 0 || len(d[0].unpinned) != 0 {
		t.Fatalf("pins left: %d, %d", len(d[0].pins), len(d[0].unpinned))
	}
	// A release within the window leaves the slab remembered, whole.
	f := submit()
	release, err = d[0].CollectSlabPinned(f, 1000, func(s *msg.Slab) { want = bytes.Clone(s.Keys) })
	if err != nil {
		t.Fatal(err)
	}
	release()
	if err := d[0].CollectSlab(f, 1000, nil, nil, 0, func(s *msg.Slab) {
		if !bytes.Equal(s.Keys, want) {
			t.Fatal("a released slab in the window changed")
		}
	}); err != nil {
		t.Fatal(err)
	}
	// A failed collect pins nothing.
	if _, err := d[0].CollectSlabPinned(1<<40, 1000, func(*msg.Slab) { t.Fatal("emitted") }); err == nil {
		t.Fatal("collect of no bulk succeeded")
	}
}

// derivedShape is the description a derived key of this shape is drawn
// under (kdf.DerivedShape).
func derivedShape(pr msg.Profile, typ fss.Type, in, out, g int, deriveBeta bool) *kdf.DerivedShape {
	return &kdf.DerivedShape{Mode: byte(msg.Derived), Type: msg.TypeByte(pr, typ), InBits: byte(in), OutBits: byte(out), G: g, DeriveBeta: deriveBeta}
}
