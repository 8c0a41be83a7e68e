package inferdemo

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/infer"
	"github.com/kord-fss/kord/internal/netshape"
	"github.com/kord-fss/kord/service"
	"github.com/kord-fss/kord/service/servicetest"
)

// planBytes is one party's material per evaluation of arch, as RunParty
// counts it (PartySupply.PlanCounts), from a session opened on both
// daemons with ids from 1; it returns the first id after that session.
func planBytes(t *testing.T, ctx context.Context, apps [2]*client.Client, arch *infer.Model) (int64, uint64) {
	t.Helper()
	var sup [2]*infer.PartySupply
	var errs [2]error
	var wg sync.WaitGroup
	for b := 0; b < 2; b++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ps, sess, err := infer.NewPartySupply(ctx, b, apps[b], arch, 1)
			if err == nil {
				sess.Wipe()
			}
			sup[b], errs[b] = ps, err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatal(err)
	}
	_, _, bytes := sup[0].PlanCounts(arch.Ring)
	return bytes, sup[0].NextID()
}

// TestPartiesOverlappedThroughDaemons runs both online parties with a
// prefetch window of two images: after the timed pass the same images
// again, each image's material fetched from the daemon while the previous
// one is evaluated. Every output of both passes equals the cleartext
// model's, the overlapped pass reports its waits, and the daemon never
// hands a party more than the window ahead of the image it evaluates.
func TestPartiesOverlappedThroughDaemons(t *testing.T) {
	m := testModel(t, "mlp")
	set := testSet(t)
	const n = 5
	imgs := make([][]int64, n)
	for i := range imgs {
		imgs[i] = infer.QuantizeImage(set.Images[i], m.Frac)
	}
	// a long match timeout: on a loaded machine one party's session can
	// lag the other's by more than the default 5 s
	p := servicetest.StartWith(t, servicetest.Options{Batch: 4096, Tune: func(c *service.Config) { c.MatchTimeout = time.Minute }})
	d := &daemonRun{apps: p.Apps}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	per, first := planBytes(t, ctx, d.apps, m.Arch())
	on0, on1, err := netshape.TCPPair(netshape.Profile{Name: "loopback"})
	if err != nil {
		t.Fatal(err)
	}
	var got [2 * n][]int64
	var windows [2]int
	var keysPer [2]int // the daemon's deliveries per image
	var afterSession, afterFirst [2]uint64
	var ahead [2]int64 // the most images delivered beyond the one reported
	var overlapped [2]int
	var errs [2]error
	var wg sync.WaitGroup
	for b := 0; b < 2; b++ {
		wg.Add(1)
		go func(b int) {
			defer wg.Done()
			cfg := PartyConfig{B: b, Model: m, Count: n, App: d.apps[b], FirstID: first, Peer: []net.Conn{on0, on1}[b],
				PrefetchBytes: 2*per + per/2,
				Ready: func(s PartySession) error {
					windows[b], afterSession[b] = s.PrefetchWindow, delivered(t, d.apps[b])
					return nil
				},
				Report: func(r PartyImage) error {
					if b == 1 {
						got[r.Index] = r.Logits
					}
					if r.Index == n-1 { // the daemon's count per image, from the timed pass
						afterFirst[b] = delivered(t, d.apps[b])
						keysPer[b] = int((afterFirst[b] - afterSession[b]) / n)
					}
					if r.Overlapped {
						overlapped[b]++
						if r.Index < n || r.OnlineNs <= 0 {
							return errors.New("an overlapped report out of place")
						}
						i := int64(r.Index - n)
						// keys handed over beyond images 0..i, in images
						beyond := (int64(delivered(t, d.apps[b]) - afterFirst[b])) / int64(keysPer[b])
						ahead[b] = max(ahead[b], beyond-(i+1))
					}
					return nil
				}}
			if b == 1 {
				cfg.Model, cfg.Images = m.Arch(), imgs
			}
			errs[b] = RunParty(ctx, cfg)
		}(b)
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatal(err)
	}
	for b := 0; b < 2; b++ {
		if windows[b] != 2 {
			t.Fatalf("party %d: window %d for %d bytes of %d per image, want 2", b, windows[b], 2*per+per/2, per)
		}
		if overlapped[b] != n {
			t.Fatalf("party %d: %d overlapped images, want %d", b, overlapped[b], n)
		}
		// once image i is given back, the window may hold the next two
		if ahead[b] > 2 {
			t.Fatalf("party %d: the daemon had handed over %d images beyond the one evaluated (window 2)", b, ahead[b])
		}
	}
	for i := range got {
		want, _, err := m.Ref(imgs[i%n])
		if err != nil {
			t.Fatal(err)
		}
		if len(got[i]) != len(want) {
			t.Fatalf("report %d: %d logits, want %d", i, len(got[i]), len(want))
		}
		for j := range want {
			if got[i][j] != want[j] {
				t.Fatalf("report %d (image %d) logit %d: secure %d, cleartext %d", i, i%n, j, got[i][j], want[j])
			}
		}
	}
}
