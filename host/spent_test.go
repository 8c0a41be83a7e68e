package host

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
)

// countingDevice counts how often each bound share pair reaches the module
// and the abandons with Mismatch set.
type countingDevice struct {
	module.Device
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
	return d.Device.Submit(ctx, r)
}

// tamperLink alters the frames its host receives while on is set.
type tamperLink struct {
	*PipeEnd
	mu   sync.Mutex
	on   bool
	flip func([]byte)
	n    int // frames altered
}

func (l *tamperLink) Recv(ctx context.Context) ([]byte, error) {
	f, err := l.PipeEnd.Recv(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && l.on {
		l.flip(f)
		l.n++
	}
	return f, err
}

func (l *tamperLink) set(on bool) {
	l.mu.Lock()
	l.on = on
	l.mu.Unlock()
}

// tamperedPair is a LocalPair whose hosts count their modules' submissions
// and receive through tamperLinks.
func tamperedPair(t *testing.T, inFlight int, flip func([]byte)) (*LocalPair, [2]*countingDevice, [2]*tamperLink) {
	lp := newPair(t, inFlight)
	var devs [2]*countingDevice
	var links [2]*tamperLink
	for b := 0; b < 2; b++ {
		devs[b] = &countingDevice{Device: lp.Devices[b], subs: map[[2]uint64]int{}}
		links[b] = &tamperLink{PipeEnd: lp.Links[b], flip: flip}
		lp.Hosts[b] = New(devs[b], links[b], inFlight, nil)
	}
	return lp, devs, links
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

// TestTamperedKeystreamSpent: party 1's keystream frames reach host 0 with
// bit 0 of the α field flipped, so the two modules rebuild different α
// and their outputs do not pair. LocalPair hands out no key, fails with
// ErrTampered and a spent BatchError, both modules get an abandon with
// Mismatch, and no share reaches a module twice (nothing is retried).
func TestTamperedKeystreamSpent(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	lp, devs, links := tamperedPair(t, 4, func(f []byte) { f[0] ^= 1 })
	ctx := context.Background()
	p := fss.Params{Type: fss.DPF, InBits: 32, OutBits: 32}
	_, _, as, bs := sharesOf(rng, p, 8)
	links[0].set(true)
	keys, err := lp.BoundKeys(ctx, msg.Keystream, p, as, bs)
	links[0].set(false)
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
	for b := 0; b < 2; b++ {
		if devs[b].mismatches < 1 {
			t.Fatalf("module %d got no abandon with Mismatch", b)
		}
		for i := range as[b] {
			if k := devs[b].subs[[2]uint64{as[b][i], bs[b][i]}]; k != 1 {
				t.Fatalf("module %d got request %d's shares %d times", b, i, k)
			}
		}
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

// TestRejectedBatchMACReusable: batchmac frames altered in both directions
// are refused by both modules' authentication, so nothing was opened: the
// error says α may be used again, and the same shares then give a pair
// that shares f_{α,β}.
func TestRejectedBatchMACReusable(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	lp, _, links := tamperedPair(t, 4, func(f []byte) { f[len(f)/2] ^= 0x40 })
	ctx := context.Background()
	p := fss.Params{Type: fss.DCF, InBits: 16, OutBits: 16}
	alphas, betas, as, bs := sharesOf(rng, p, 4)
	links[0].set(true)
	links[1].set(true)
	_, err := lp.BoundKeys(ctx, msg.BatchMAC, p, as, bs)
	links[0].set(false)
	links[1].set(false)
	if !errors.Is(err, ErrRejected) || !AlphaReusable(err) {
		t.Fatalf("got %v (reusable %v), want a rejection with α reusable", err, AlphaReusable(err))
	}
	keys, err := lp.BoundKeys(ctx, msg.BatchMAC, p, as, bs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range alphas {
		checkPair(t, rng, keys[0][i], keys[1][i], alphas[i], betas[i])
	}
}
