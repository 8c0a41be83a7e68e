package infer

import (
	"context"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/service/servicetest"
)

// tinyResNet is a ResNet-18 small enough to run through real party
// daemons in a unit test: the whole topology on a 16×16 input, 2 channels
// in stage 1.
const tinyResNet = "resnet18-s32-w4-c10"

// TestResNetThroughDaemons: a reduced ResNet-18 with every key and
// correlation asked of two real party daemons (each with its module
// behind a module socket, paired over their peer link) through
// DaemonSource, streamed in small chunks so keys split into several
// requests per step, in both modes: the client's logits equal the
// cleartext model bit for bit and the keys and correlations are exactly
// the inventory's; the daemons delivered every key, the source generated
// none.
func TestResNetThroughDaemons(t *testing.T) {
	m, err := ResNetModel(tinyResNet)
	if err != nil {
		t.Fatal(err)
	}
	x := ResNetImage(m, ResNetSeed)
	want, _, err := m.Ref(x)
	if err != nil {
		t.Fatal(err)
	}
	const chunk = 200
	inv, err := m.KeyInventory(chunk)
	if err != nil {
		t.Fatal(err)
	}
	p := servicetest.StartWith(t, servicetest.Options{Batch: 1024})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ds, err := NewDaemonSource(ctx, p.Apps, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	ds.PerRequest = 64 // a step of up to 200 ReLUs: up to four requests per key kind
	for _, overlap := range []bool{false, true} {
		r0, k0, c0 := ds.Counts()
		const prefetch = 1 << 24
		got, rep, err := RunStream(ctx, m, x, Sources{Keys: ds, Corr: ds}, StreamConfig{Chunk: chunk, Overlap: overlap, PrefetchBytes: prefetch})
		if err != nil {
			t.Fatalf("overlap %v: %v", overlap, err)
		}
		// the window is counted from the largest step before it is drawn
		if want := int(prefetch / (2 * rep.MaterialStepBytes)); overlap && (rep.Ahead != want || want < 1) {
			t.Fatalf("%d steps ahead for %d bytes, want %d (largest step %d bytes per party)", rep.Ahead, prefetch, want, rep.MaterialStepBytes)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("overlap %v: secure %v, cleartext %v", overlap, got, want)
		}
		r1, k1, c1 := ds.Counts()
		if rep.KeysTotal != inv.KeyTotal || int(k1-k0) != inv.KeyTotal || rep.Correlations != inv.Correlations ||
			int(c1-c0) != 2*inv.Correlations || rep.CorrWords != inv.CorrWords {
			t.Fatalf("overlap %v: %d keys (%d asked), %d correlations (%d asked with the weight masks); inventory %d keys, %d correlations",
				overlap, rep.KeysTotal, k1-k0, rep.Correlations, c1-c0, inv.KeyTotal, inv.Correlations)
		}
		t.Logf("overlap %v: %d keys, %d correlations, %d requests, %d steps", overlap, k1-k0, c1-c0, r1-r0, rep.Steps)
		// each non-linear step is two key batches; split, more requests
		if keyReqs, nonLinear := (r1-r0)-(c1-c0), rep.Steps-rep.Correlations; keyReqs <= 2*int64(nonLinear) {
			t.Fatalf("overlap %v: %d key requests for %d non-linear steps: the keys were not split", overlap, keyReqs, nonLinear)
		}
	}
	var total uint64
	for b := 0; b < 2; b++ {
		st, err := p.Apps[b].Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		total += st.KeysDelivered
	}
	if _, keys, _ := ds.Counts(); total < 2*uint64(keys) {
		t.Fatalf("the daemons delivered %d keys, the source handed out %d pairs", total, keys)
	}
}

// TestDaemonSourceDies: a party daemon that stops in the middle of a run
// ends it with an error naming the layer and the request, at once, not a
// hang; the source then refuses further requests with the same error.
func TestDaemonSourceDies(t *testing.T) {
	m, err := ResNetModel(tinyResNet)
	if err != nil {
		t.Fatal(err)
	}
	x := ResNetImage(m, ResNetSeed)
	for _, overlap := range []bool{false, true} {
		p := servicetest.StartWith(t, servicetest.Options{Batch: 1024})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		ds, err := NewDaemonSource(ctx, p.Apps, 1)
		if err != nil {
			t.Fatal(err)
		}
		ds.Timeout = 30 * time.Second
		// party 1's daemon stops once some keys have been asked for
		stopAfter := &stopping{DaemonSource: ds, after: 3, stop: p.Stop[1]}
		t0 := time.Now()
		_, _, err = RunStream(ctx, m, x, Sources{Keys: stopAfter, Corr: ds}, StreamConfig{Chunk: 1000, Overlap: overlap})
		took := time.Since(t0)
		if err == nil {
			t.Fatalf("overlap %v: the run went through with a daemon stopped", overlap)
		}
		if took > 20*time.Second {
			t.Fatalf("overlap %v: the error took %v", overlap, took)
		}
		t.Logf("overlap %v: after %v: %v", overlap, took, err)
		for _, want := range []string{"layer", "request", "site 1"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("overlap %v: the error does not name the %s: %v", overlap, want, err)
			}
		}
		if _, _, _, err2 := ds.DerivedBatch(fss.Params{Type: fss.DCF, InBits: 32, OutBits: 32}, 1, false); err2 == nil {
			t.Fatalf("overlap %v: the source still answers after a site failed", overlap)
		}
		ds.Close()
		cancel()
	}
}

// stopping stops a daemon before the after-th key exchange.
type stopping struct {
	*DaemonSource
	after int
	stop  func()
	n     int
}

func (s *stopping) derivedBatches(asks []derivedAsk) ([]derivedKeys, error) {
	s.n++
	if s.n == s.after {
		s.stop()
	}
	return s.DaemonSource.derivedBatches(asks)
}

// TestDaemonSourceStuck: the sites' peer link stops carrying anything (a
// daemon alive but stuck, as far as the supplier can tell): the run ends
// with an error naming the layer and the request within the source's
// Timeout (or the daemons' own timeouts, if sooner), not a hang.
func TestDaemonSourceStuck(t *testing.T) {
	m, err := ResNetModel(tinyResNet)
	if err != nil {
		t.Fatal(err)
	}
	x := ResNetImage(m, ResNetSeed)
	var fp *freezeProxy
	p := servicetest.StartWith(t, servicetest.Options{Batch: 1024, Via: func(addr string) (string, error) {
		var err error
		fp, err = newFreezeProxy(addr)
		return fp.addr(), err
	}})
	t.Cleanup(fp.close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ds, err := NewDaemonSource(ctx, p.Apps, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	ds.Timeout = 3 * time.Second
	src := &freezing{DaemonSource: ds, after: 3, freeze: fp.freeze}
	t0 := time.Now()
	_, _, err = RunStream(ctx, m, x, Sources{Keys: src, Corr: ds}, StreamConfig{Chunk: 1000})
	took := time.Since(t0)
	t.Logf("after %v: %v", took, err)
	if err == nil {
		t.Fatal("the run went through with the peer link frozen")
	}
	if took > 30*time.Second {
		t.Fatalf("the error took %v", took)
	}
	for _, want := range []string{"layer", "request"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("the error does not name the %s: %v", want, err)
		}
	}
}

// freezing freezes the peer link before the after-th key exchange.
type freezing struct {
	*DaemonSource
	after  int
	freeze func()
	n      int
}

func (s *freezing) derivedBatches(asks []derivedAsk) ([]derivedKeys, error) {
	s.n++
	if s.n == s.after {
		s.freeze()
	}
	return s.DaemonSource.derivedBatches(asks)
}

// freezeProxy forwards TCP connections to a target until frozen; then it
// holds every byte (the connections stay open).
type freezeProxy struct {
	l      net.Listener
	target string
	frozen chan struct{}
	once   sync.Once
}

func newFreezeProxy(target string) (*freezeProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	fp := &freezeProxy{l: l, target: target, frozen: make(chan struct{})}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go fp.pipe(u, c)
			go fp.pipe(c, u)
		}
	}()
	return fp, nil
}

func (fp *freezeProxy) addr() string { return fp.l.Addr().String() }
func (fp *freezeProxy) freeze()      { fp.once.Do(func() { close(fp.frozen) }) }
func (fp *freezeProxy) close()       { fp.l.Close() }

func (fp *freezeProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-fp.frozen:
			return // held: nothing more goes through
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}
