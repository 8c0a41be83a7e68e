package host

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// countingDevice counts how often each bound share pair reaches the module
// and the abandons with Mismatch set.
type countingDevice struct {
	syncDevice
	mu         sync.Mutex
	subs       map[[2]uint64]int
	mismatches int
}

func (d *countingDevice) Submit(ctx context.Context, r *msg.SubmitRequest) (*msg.SubmitResponse, error) {
	d.mu.Lock()
	switch r.Kind {
	case msg.SubmitShares:
		for _, s := range r.Shares {
			d.subs[[2]uint64{s.AlphaShare, s.BetaShare}]++
		}
	case msg.SubmitBulk:
		if b := r.Bulk; b != nil && b.Mode == msg.Bound {
			for i := range b.AlphaShares {
				d.subs[[2]uint64{b.AlphaShares[i], b.BetaShares[i]}]++
			}
		}
	case msg.SubmitAbandon:
		if r.Mismatch {
			d.mismatches++
		}
	}
	d.mu.Unlock()
	return d.syncDevice.Submit(ctx, r)
}

// tamperTap alters the frames of the batches party 0 sends while on (or,
// with once, the next batch's only).
type tamperTap struct {
	mu   sync.Mutex
	on   bool
	once bool
	flip func([]byte)
	n    int // batches altered
}

func (l *tamperTap) tap(m *pb.PeerMsg) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := m.GetBatch(); b != nil && len(b.FrameData) > 0 && l.on {
		l.flip(b.FrameData)
		l.n++
		l.on = !l.once
	}
}

func (l *tamperTap) set(on bool) {
	l.mu.Lock()
	l.on = on
	l.mu.Unlock()
}

// checkMismatchAbandons checks that both modules got an abandon with
// Mismatch.
func checkMismatchAbandons(t *testing.T, devs [2]*countingDevice) {
	t.Helper()
	for b := range devs {
		devs[b].mu.Lock()
		n := devs[b].mismatches
		devs[b].mu.Unlock()
		if n < 1 {
			t.Fatalf("module %d got no abandon with Mismatch", b)
		}
	}
}

// tamperedPair is a LocalPair whose modules count their submissions and
// whose party 0's batches pass through a tamperTap.
func tamperedPair(t *testing.T, inFlight int, flip func([]byte)) (*LocalPair, [2]*countingDevice, *tamperTap) {
	var devs [2]*countingDevice
	tap := &tamperTap{flip: flip}
	lp, err := NewLocalPair(context.Background(), LocalOptions{InFlight: inFlight, tap: tap.tap,
		wrap: func(b int, d syncDevice) syncDevice {
			devs[b] = &countingDevice{syncDevice: d, subs: map[[2]uint64]int{}}
			return devs[b]
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lp.Close)
	return lp, devs, tap
}

func sharesOf(rng *rand.Rand, p fss.Params, n int) (alphas, betas []uint64, as, bs [2][]uint64) {
	ma, mb := prg.Mask(p.InBits), prg.Mask(p.OutBits)
	for i := 0; i < n; i++ {
		a, b := rng.Uint64()&ma, rng.Uint64()&mb
		a0, b0 := rng.Uint64()&ma, rng.Uint64()&mb
		alphas, betas = append(alphas, a), append(betas, b)
		as[0], as[1] = append(as[0], a0), append(as[1], (a-a0)&ma)
		bs[0], bs[1] = append(bs[0], b0), append(bs[1], (b-b0)&mb)
	}
	return
}

// TestTamperedKeystreamSpent: party 0's keystream frames reach party 1
// with bit 0 of the α field flipped, so the two modules rebuild different
// α and their outputs do not pair. No key is handed out, the error is
// ErrTampered and a spent BatchError, both modules get an abandon with
// Mismatch, and every share reached each module (a request whose frames
// no module opened may be batched again, never one whose were).
func TestTamperedKeystreamSpent(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	lp, devs, tap := tamperedPair(t, 4, func(f []byte) { f[0] ^= 1 })
	ctx := context.Background()
	p := fss.Params{Type: fss.DPF, InBits: 32, OutBits: 32}
	_, _, as, bs := sharesOf(rng, p, 8)
	tap.set(true)
	keys, err := lp.BoundKeys(ctx, msg.Keystream, p, as, bs)
	tap.set(false)
	if !errors.Is(err, ErrTampered) {
		t.Fatalf("got %v, want ErrTampered", err)
	}
	var be *BatchError
	if !errors.As(err, &be) || !be.Spent || AlphaReusable(err) || be.Start != 0 {
		t.Fatalf("%v: want a spent BatchError from request 0", err)
	}
	if len(keys[0]) != 0 || len(keys[1]) != 0 {
		t.Fatal("keys were handed out from a batch that does not pair")
	}
	checkMismatchAbandons(t, devs)
	for b := 0; b < 2; b++ {
		devs[b].mu.Lock()
		for i := range as[b] {
			if k := devs[b].subs[[2]uint64{as[b][i], bs[b][i]}]; k < 1 {
				t.Fatalf("module %d never got request %d's shares", b, i)
			}
		}
		devs[b].mu.Unlock()
	}
	// The pair keeps working, with fresh α.
	alphas, betas, as, bs := sharesOf(rng, p, 4)
	keys, err = lp.BoundKeys(ctx, msg.Keystream, p, as, bs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range alphas {
		checkPair(t, rng, keys[0][i], keys[1][i], alphas[i], betas[i])
	}
}

// TestRefusedBatchMACFrameSpent: a batchmac frame of party 0 altered once
// is refused by party 1's module. Party 0's module had opened party 1's
// frames of that batch already (they go first), so the requests are spent
// — the daemons' rule (service/spent.go) — and none is handed out; the
// pair then delivers fresh requests.
func TestRefusedBatchMACFrameSpent(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	lp, _, tap := tamperedPair(t, 4, func(f []byte) { f[len(f)/2] ^= 0x40 })
	tap.once = true
	ctx := context.Background()
	p := fss.Params{Type: fss.DCF, InBits: 16, OutBits: 16}
	_, _, as, bs := sharesOf(rng, p, 4)
	tap.set(true)
	keys, err := lp.BoundKeys(ctx, msg.BatchMAC, p, as, bs)
	if err == nil || AlphaReusable(err) || len(keys[0]) != 0 {
		t.Fatalf("got %v (reusable %v, %d keys), want a spent error and no key", err, AlphaReusable(err), len(keys[0]))
	}
	if tap.n != 1 {
		t.Fatalf("%d batches altered, want 1", tap.n)
	}
	alphas, betas, as, bs := sharesOf(rng, p, 4)
	keys, err = lp.BoundKeys(ctx, msg.BatchMAC, p, as, bs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range alphas {
		checkPair(t, rng, keys[0][i], keys[1][i], alphas[i], betas[i])
	}
}
