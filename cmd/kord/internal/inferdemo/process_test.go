package inferdemo

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/infer"
	"github.com/kord-fss/kord/internal/netshape"
	"github.com/kord-fss/kord/service/servicetest"
)

// daemonRun is one run of both online parties (and the dealer) on real
// party daemons, each with its module behind a module socket, the sites'
// peer link through a counting proxy.
type daemonRun struct {
	apps  [2]*client.Client
	proxy *netshape.Proxy
}

func startDaemons(t testing.TB) *daemonRun {
	t.Helper()
	r := &daemonRun{}
	p := servicetest.Start(t, 4096, func(addr string) (string, error) {
		px, err := netshape.NewProxy(addr, netshape.Profile{Name: "loopback"})
		if err != nil {
			return "", err
		}
		r.proxy = px
		t.Cleanup(func() { px.Close() })
		return px.Addr(), nil
	})
	r.apps = p.Apps
	return r
}

// delivered is what a party daemon has handed out so far.
func delivered(t *testing.T, c *client.Client) uint64 {
	t.Helper()
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.KeysDelivered
}

// TestPartiesThroughDaemons runs the two online parties (RunParty) and
// the dealer (RunDealer) as they run in the five-process demo, but in
// this process: every key and correlation through the party daemons,
// every output equal to the cleartext model's, and no more than one
// byte between the sites per key or correlation.
func TestPartiesThroughDaemons(t *testing.T) {
	m := testModel(t, "mlp")
	set := testSet(t)
	const n = 2
	imgs := make([][]int64, n)
	for i := range imgs {
		imgs[i] = infer.QuantizeImage(set.Images[i], m.Frac)
	}
	d := startDaemons(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	on0, on1, err := netshape.TCPPair(netshape.Profile{Name: "loopback"})
	if err != nil {
		t.Fatal(err)
	}
	var dl, pl [2]net.Conn
	for b := 0; b < 2; b++ {
		if dl[b], pl[b], err = netshape.TCPPair(netshape.Profile{Name: "loopback"}); err != nil {
			t.Fatal(err)
		}
	}
	dealerErr := make(chan error, 1)
	go func() { dealerErr <- RunDealer(ctx, m.Arch(), dl, n) }()
	var ready sync.WaitGroup
	ready.Add(2)
	var start atomic.Int64
	var once sync.Once
	var items int
	var got [n][]int64
	var errs [2]error
	var wg sync.WaitGroup
	for b := 0; b < 2; b++ {
		wg.Add(1)
		go func(b int) {
			defer wg.Done()
			cfg := PartyConfig{B: b, Model: m, Count: n, App: d.apps[b], FirstID: 1, Peer: []net.Conn{on0, on1}[b], Dealer: pl[b],
				Ready: func(s PartySession) error {
					if b == 1 {
						items = s.Keys + s.Corrs
					}
					ready.Done()
					ready.Wait()
					once.Do(func() { start.Store(d.proxy.Bytes()) })
					return nil
				},
				Report: func(r PartyImage) error {
					if b == 1 {
						got[r.Index] = r.Logits
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
	if err := <-dealerErr; err != nil {
		t.Fatal(err)
	}
	for i := range imgs {
		want, _, err := m.Ref(imgs[i])
		if err != nil {
			t.Fatal(err)
		}
		if len(got[i]) != len(want) {
			t.Fatalf("image %d: %d logits, want %d", i, len(got[i]), len(want))
		}
		for j := range want {
			if got[i][j] != want[j] {
				t.Fatalf("image %d logit %d: secure %d, cleartext %d", i, j, got[i][j], want[j])
			}
		}
	}
	crossed := d.proxy.Bytes() - start.Load()
	if items == 0 || float64(crossed)/float64(n*items) > 1 {
		t.Fatalf("%d bytes crossed between the sites for %d images of %d keys and correlations: over 1 byte each", crossed, n, items)
	}
	t.Logf("%d images, %d keys+correlations each, %d bytes between the sites (%.3f per item)", n, items, crossed, float64(crossed)/float64(n*items))
}

// A party 1 image of the wrong size is refused before any request.
func TestPartyBadImage(t *testing.T) {
	m := testModel(t, "mlp")
	d := startDaemons(t)
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	before := delivered(t, d.apps[1])
	err := RunParty(context.Background(), PartyConfig{B: 1, Model: m.Arch(), Images: [][]int64{make([]int64, 783)}, App: d.apps[1], FirstID: 1, Peer: a})
	if err == nil || !strings.Contains(err.Error(), "image 0 has 783 values") {
		t.Fatalf("got %v, want an error naming the image and its size", err)
	}
	if after := delivered(t, d.apps[1]); after != before {
		t.Fatalf("a refused image took %d keys from the daemon", after-before)
	}
}

// cutConn fails its writes once armed and limit more bytes are written,
// closing the connection: the other party disconnects mid-layer.
type cutConn struct {
	net.Conn
	armed atomic.Bool
	left  atomic.Int64
}

func (c *cutConn) Write(b []byte) (int, error) {
	if c.armed.Load() && c.left.Add(-int64(len(b))) < 0 {
		c.Conn.Close()
		return 0, errors.New("cut")
	}
	return c.Conn.Write(b)
}

// A peer that disconnects in the middle of image 1's online phase: both
// parties stop with an error naming the image and the layer, and neither
// asks its daemon for image 2's keys.
func TestPartyPeerDisconnect(t *testing.T) {
	m := testModel(t, "mlp")
	set := testSet(t)
	imgs := make([][]int64, 3)
	for i := range imgs {
		imgs[i] = infer.QuantizeImage(set.Images[i], m.Frac)
	}
	d := startDaemons(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, b, err := netshape.TCPPair(netshape.Profile{Name: "loopback"})
	if err != nil {
		t.Fatal(err)
	}
	cut := &cutConn{Conn: b}
	var perImage [2]uint64
	var afterSession [2]uint64
	var errs [2]error
	var wg sync.WaitGroup
	for p := 0; p < 2; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			cfg := PartyConfig{B: p, Model: m, Count: len(imgs), App: d.apps[p], FirstID: 1, Peer: a,
				Ready: func(PartySession) error { afterSession[p] = delivered(t, d.apps[p]); return nil },
				Report: func(r PartyImage) error {
					if r.Index == 0 {
						perImage[p] = delivered(t, d.apps[p]) - afterSession[p]
						if p == 1 {
							cut.left.Store(300)
							cut.armed.Store(true)
						}
					}
					return nil
				}}
			if p == 1 {
				cfg.Model, cfg.Images, cfg.Peer = m.Arch(), imgs, cut
			}
			errs[p] = RunParty(ctx, cfg)
		}(p)
	}
	wg.Wait()
	for p := 0; p < 2; p++ {
		if errs[p] == nil || !strings.Contains(errs[p].Error(), "image 1") || !strings.Contains(errs[p].Error(), "layer") {
			t.Fatalf("party %d: got %v, want an error naming image 1 and the layer", p, errs[p])
		}
		if perImage[p] == 0 {
			t.Fatalf("party %d: image 0 took no keys", p)
		}
		if got := delivered(t, d.apps[p]) - afterSession[p]; got != 2*perImage[p] {
			t.Fatalf("party %d: %d keys delivered after the session, want exactly two images' %d", p, got, 2*perImage[p])
		}
	}
}
