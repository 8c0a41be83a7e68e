package netshape

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"
)

func TestPresets(t *testing.T) {
	for _, name := range []string{"loopback", "lan", "1gbps", "wan"} {
		p, err := Preset(name)
		if err != nil || p.Name != name {
			t.Fatalf("%s: %v %+v", name, err, p)
		}
	}
	if p, _ := Preset("1gbps"); p.BitsPerSecond != 1e9 || p.RTT != 100*time.Microsecond || p.OneWay() != 50*time.Microsecond {
		t.Fatalf("1gbps = %+v", p)
	}
	if p, _ := Preset("wan"); p.BitsPerSecond != 40e6 || p.RTT != 20*time.Millisecond {
		t.Fatalf("wan = %+v", p)
	}
	if p, _ := Preset("lan"); p.BitsPerSecond != 10e9 || p.RTT != 50*time.Microsecond {
		t.Fatalf("lan = %+v", p)
	}
	if p, _ := Preset("loopback"); !p.Unshaped() {
		t.Fatal("loopback must be unshaped")
	}
	if _, err := Preset("dialup"); !errors.Is(err, ErrUnknownPreset) {
		t.Fatalf("unknown preset: %v", err)
	}
}

// TestIntactInOrder is a property test: random profiles and random write
// sizes, both directions at once; every byte arrives, in order.
func TestIntactInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 8; trial++ {
		p := Profile{Name: "t", BitsPerSecond: []float64{0, 50e6, 1e9, 10e9}[rng.IntN(4)], RTT: time.Duration(rng.IntN(4)) * time.Millisecond}
		if p.Unshaped() {
			p.RTT = time.Millisecond
		}
		a, b, err := TCPPair(p)
		if err != nil {
			t.Fatal(err)
		}
		size := 1 + rng.IntN(300<<10)
		msg := [2][]byte{make([]byte, size), make([]byte, size/2+1)}
		for i := range msg {
			for j := range msg[i] {
				msg[i][j] = byte(rng.Uint32())
			}
		}
		sizes := make([]int, 0)
		for left := size; left > 0; {
			n := min(left, 1+rng.IntN(40<<10))
			sizes = append(sizes, n)
			left -= n
		}
		errc := make(chan error, 2)
		go func() { // a writes msg[0] in random pieces
			off := 0
			for _, n := range sizes {
				if _, err := a.Write(msg[0][off : off+n]); err != nil {
					errc <- err
					return
				}
				off += n
			}
			errc <- nil
		}()
		go func() { _, err := b.Write(msg[1]); errc <- err }()
		got := [2][]byte{make([]byte, len(msg[0])), make([]byte, len(msg[1]))}
		if _, err := io.ReadFull(b, got[0]); err != nil {
			t.Fatalf("trial %d (%v): read: %v", trial, p, err)
		}
		if _, err := io.ReadFull(a, got[1]); err != nil {
			t.Fatalf("trial %d (%v): read: %v", trial, p, err)
		}
		for i := 0; i < 2; i++ {
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[i], msg[i]) {
				t.Fatalf("trial %d (%v): direction %d corrupted", trial, p, i)
			}
		}
		a.Close()
		b.Close()
	}
}

// TestBandwidthLowerBound: a large transfer takes at least its
// serialization time (minus the bucket's burst, with generous slack: only
// the lower bound is asserted, never an upper one).
func TestBandwidthLowerBound(t *testing.T) {
	p := Profile{Name: "t", BitsPerSecond: 100e6}
	a, b, err := TCPPair(p)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	const size = 2 << 20 // 2 MiB at 100 Mbit/s: ≈ 168 ms
	go func() { _, _ = a.Write(make([]byte, size)) }()
	t0 := time.Now()
	if _, err := io.ReadFull(b, make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	el := time.Since(t0)
	min := (p.TransferTime(size) - burstTime) * 8 / 10
	if el < min {
		t.Fatalf("2 MiB at 100 Mbit/s took %v, less than %v", el, min)
	}
}

// TestOneWayDelay: a ping arrives no sooner than the one-way delay, and a
// round trip takes at least the RTT.
func TestOneWayDelay(t *testing.T) {
	p := Profile{Name: "t", BitsPerSecond: 1e9, RTT: 30 * time.Millisecond}
	a, b, err := TCPPair(p)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	go func() { // echo
		buf := make([]byte, 1)
		for {
			if _, err := io.ReadFull(b, buf); err != nil {
				return
			}
			if _, err := b.Write(buf); err != nil {
				return
			}
		}
	}()
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		if _, err := a.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1)
		if _, err := io.ReadFull(a, buf); err != nil || buf[0] != byte(i) {
			t.Fatalf("echo: %v %v", err, buf)
		}
		if el := time.Since(t0); el < p.RTT {
			t.Fatalf("round trip %v < RTT %v", el, p.RTT)
		}
	}
}

// TestDelayPipelines: many writes in a row cost about one delay, not one
// per write. Asserted loosely (well under the serialized sum).
func TestDelayPipelines(t *testing.T) {
	// 100 ms one way, no bandwidth limit: serialized, 50 writes would take
	// 5 s; the bound (2.5 s) leaves a loaded machine 2.4 s of slack.
	p := Profile{Name: "t", RTT: 200 * time.Millisecond}
	a, b, err := TCPPair(p)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	const writes = 50
	t0 := time.Now()
	go func() {
		for i := 0; i < writes; i++ {
			_, _ = a.Write([]byte{byte(i)})
		}
	}()
	got := make([]byte, writes)
	if _, err := io.ReadFull(b, got); err != nil {
		t.Fatal(err)
	}
	el := time.Since(t0)
	if el < p.OneWay() {
		t.Fatalf("arrived after %v, before the one-way delay %v", el, p.OneWay())
	}
	for i := range got {
		if got[i] != byte(i) {
			t.Fatalf("byte %d = %d", i, got[i])
		}
	}
	if el > writes*p.OneWay()/2 {
		t.Fatalf("%d writes took %v: the delay did not pipeline", writes, el)
	}
}

func TestCloseFlushesAndUnshapedIsIdentity(t *testing.T) {
	p := Profile{Name: "t", BitsPerSecond: 1e9, RTT: 10 * time.Millisecond}
	a, b, err := TCPPair(p)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	msg := bytes.Repeat([]byte("kord"), 10000)
	if _, err := a.Write(msg); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil { // still in the delay line: delivered, then closed
		t.Fatal(err)
	}
	got, err := io.ReadAll(b)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("after close: %d bytes, %v", len(got), err)
	}
	if _, err := a.Write([]byte{1}); err == nil {
		t.Fatal("write after close succeeded")
	}
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	if Wrap(c1, Profile{Name: "loopback"}) != c1 {
		t.Fatal("an unshaped profile must not wrap")
	}
}

func TestListenerShapesAccepted(t *testing.T) {
	p := Profile{Name: "t", RTT: 20 * time.Millisecond}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sl := WrapListener(ln, p)
	defer sl.Close()
	go func() {
		c, err := sl.Accept()
		if err != nil {
			return
		}
		_, _ = c.Write([]byte("x"))
		_ = c.Close()
	}()
	t0 := time.Now()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(t0); el < p.OneWay() {
		t.Fatalf("accepted side's byte arrived after %v < %v", el, p.OneWay())
	}
}

func benchTransfer(b *testing.B, name string) {
	p, err := Preset(name)
	if err != nil {
		b.Fatal(err)
	}
	x, y, err := TCPPair(p)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	defer y.Close()
	const size = 1 << 20
	buf := make([]byte, size)
	go func() { _, _ = io.Copy(io.Discard, y) }()
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := x.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTransferLoopback(b *testing.B) { benchTransfer(b, "loopback") }
func BenchmarkTransferLAN(b *testing.B)      { benchTransfer(b, "lan") }
func BenchmarkTransfer1Gbps(b *testing.B)    { benchTransfer(b, "1gbps") }

// BenchmarkPingPong1Gbps is one 64-byte round trip on the 1gbps preset.
func BenchmarkPingPong1Gbps(b *testing.B) {
	p, _ := Preset("1gbps")
	x, y, err := TCPPair(p)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	defer y.Close()
	go func() {
		buf := make([]byte, 64)
		for {
			if _, err := io.ReadFull(y, buf); err != nil {
				return
			}
			if _, err := y.Write(buf); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64)
	for i := 0; i < b.N; i++ {
		if _, err := x.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(x, buf); err != nil {
			b.Fatal(err)
		}
	}
}
