// Package netshape shapes real sockets in Go: a wrapped net.Conn sends
// what is written to it through a token bucket (the link's bandwidth) and
// then holds every chunk for the link's one-way delay (half its round
// trip) before it reaches the socket. Reads pass through, so wrapping both
// ends of a connection shapes both directions, each on its own; a wrapped
// net.Listener shapes what the accepting side sends.
//
// The delay pipelines: a stream of writes is timestamped chunk by chunk
// and each chunk is released once its own delay has passed, so n writes in
// a row cost one delay plus their serialization time, not n delays. The
// writer is paced by the bucket (Write returns once its bytes have
// "left", i.e. after their serialization time), so at most one
// bandwidth-delay product plus a bounded queue sits in the shaper.
//
// The presets are the links of kord's measured runs (issue 21 and the
// baseline issue): loopback (unshaped), lan (10 Gbit/s, 0.05 ms round
// trip), 1gbps (1 Gbit/s, 0.1 ms), wan (40 Mbit/s, 20 ms).
package netshape

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kord-fss/kord/internal/loopback"
)

// Profile is one link: a bandwidth per direction and a round trip, split
// evenly between the two directions.
type Profile struct {
	Name string
	// BitsPerSecond per direction; 0 means unlimited.
	BitsPerSecond float64
	// RTT is the round trip; each direction is delayed by RTT/2.
	RTT time.Duration
}

// Unshaped reports whether the profile changes nothing.
func (p Profile) Unshaped() bool { return p.BitsPerSecond <= 0 && p.RTT <= 0 }

// OneWay is the delay of one direction.
func (p Profile) OneWay() time.Duration { return p.RTT / 2 }

// TransferTime is the serialization time of n bytes at the profile's
// bandwidth (0 if unlimited).
func (p Profile) TransferTime(n int64) time.Duration {
	if p.BitsPerSecond <= 0 {
		return 0
	}
	return time.Duration(float64(n) * 8 / p.BitsPerSecond * float64(time.Second))
}

func (p Profile) String() string {
	if p.Unshaped() {
		return p.Name + " (unshaped)"
	}
	bw := "unlimited"
	if p.BitsPerSecond > 0 {
		bw = fmt.Sprintf("%g Mbit/s", p.BitsPerSecond/1e6)
	}
	return fmt.Sprintf("%s (%s, %v round trip)", p.Name, bw, p.RTT)
}

var presets = map[string]Profile{
	"loopback": {Name: "loopback"},
	"lan":      {Name: "lan", BitsPerSecond: 10e9, RTT: 50 * time.Microsecond},
	"1gbps":    {Name: "1gbps", BitsPerSecond: 1e9, RTT: 100 * time.Microsecond},
	"wan":      {Name: "wan", BitsPerSecond: 40e6, RTT: 20 * time.Millisecond},
}

// ErrUnknownPreset is returned by Preset for a name it does not know.
var ErrUnknownPreset = errors.New("netshape: unknown link preset")

// Preset returns the named profile: loopback, lan, 1gbps or wan.
func Preset(name string) (Profile, error) {
	p, ok := presets[name]
	if !ok {
		return Profile{}, fmt.Errorf("%w %q (want one of %v)", ErrUnknownPreset, name, Presets())
	}
	return p, nil
}

// Presets lists the preset names, sorted.
func Presets() []string {
	out := make([]string, 0, len(presets))
	for k := range presets {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

const (
	// chunkSize bounds one timestamped unit: a write is cut into chunks so
	// a large write streams out instead of arriving all at once.
	chunkSize = 16 << 10
	// queueChunks bounds the chunks in flight in the delay line.
	queueChunks = 1024
	// burstTime is the bucket's depth in time at the link's bandwidth
	// (at least minBurst bytes): an idle link may send this much at once.
	// The writer sleeps only when it is ahead by more than slack; a sleep
	// that fires late (timers here fire up to ~1 ms late) is absorbed by
	// the depth, so the average rate stays exact.
	burstTime = 2 * time.Millisecond
	minBurst  = 64 << 10
	slack     = time.Millisecond
	// spinBelow: the delay line sleeps on a timer until this close to a
	// chunk's due time, then yields in a loop until it is due, so a
	// 50 µs one-way delay is not rounded up to the timer's granularity.
	spinBelow = 1500 * time.Microsecond
)

// waitUntil returns at t or later, or false if stop is closed first.
func waitUntil(t time.Time, tm *time.Timer, stop <-chan struct{}) bool {
	if d := time.Until(t) - spinBelow; d > 0 {
		tm.Reset(d)
		select {
		case <-tm.C:
		case <-stop:
			tm.Stop()
			return false
		}
	}
	for time.Now().Before(t) {
		select {
		case <-stop:
			return false
		default:
		}
		runtime.Gosched()
	}
	return true
}

type chunk struct {
	b   []byte
	due time.Time
}

// Conn is a shaped connection; it is a net.Conn.
type Conn struct {
	net.Conn
	p        Profile
	wmu      sync.Mutex // serializes Write
	next     time.Time  // the bucket's virtual clock: when the last byte left
	q        chan chunk
	done     chan struct{} // closed when the pump has stopped
	errMu    sync.Mutex
	err      error // the first error of the underlying write
	closeMu  sync.Mutex
	closed   bool
	shutdown chan struct{} // closed by Close to stop a pump stuck on delay
	// writing is set while a Write is queueing chunks; idle gets a token
	// when one returns (see wait).
	writing atomic.Bool
	idle    chan struct{}
}

// Wrap shapes what is written to c according to p. An unshaped profile
// returns c itself. Write deadlines of c bound only the final socket
// write, not the time a Write waits for the bucket.
func Wrap(c net.Conn, p Profile) net.Conn {
	if p.Unshaped() {
		return c
	}
	s := &Conn{Conn: c, p: p, q: make(chan chunk, queueChunks), done: make(chan struct{}), shutdown: make(chan struct{}), idle: make(chan struct{}, 1)}
	go s.pump()
	return s
}

// pump releases chunks in order once each is due.
func (s *Conn) pump() {
	defer close(s.done)
	t := time.NewTimer(time.Hour)
	t.Stop()
	for c := range s.q {
		if !s.wait(c.due, t) {
			return
		}
		if s.failed() != nil {
			continue // drain, nothing more reaches the socket
		}
		if _, err := s.Conn.Write(c.b); err != nil {
			s.errMu.Lock()
			s.err = err
			s.errMu.Unlock()
		}
	}
}

// wait returns once due has passed, or false if the connection was shut
// down. While a Write is still queueing chunks (a bulk transfer) it sleeps
// on the timer, which may fire up to a millisecond late here: that delays
// chunks in the middle of the transfer, which the receiver cannot tell
// apart, but burns no CPU. Spinning there cost up to a core per shaped
// link for the whole transfer, taken from the processes at both ends of
// it on a small machine. Once the last Write has returned, the chunks
// still queued (a message's tail, or a small message whole) are released
// exactly, as waitUntil does, so a transfer ends and a round trip lasts
// as long as the profile says.
func (s *Conn) wait(due time.Time, tm *time.Timer) bool {
	for s.writing.Load() {
		d := time.Until(due)
		if d <= 0 {
			return true
		}
		tm.Reset(d)
		select {
		case <-tm.C:
			return true
		case <-s.idle: // a Write returned: look again
			tm.Stop()
		case <-s.shutdown:
			tm.Stop()
			return false
		}
	}
	return waitUntil(due, tm, s.shutdown)
}

func (s *Conn) failed() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// Write paces b through the bucket and hands it to the delay line; it
// returns once the bytes have left at the link's bandwidth. An error of
// an earlier delayed write is returned by a later Write.
func (s *Conn) Write(b []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.writing.Store(true)
	defer func() {
		s.writing.Store(false)
		select {
		case s.idle <- struct{}{}:
		default:
		}
	}()
	n := 0
	for len(b) > 0 {
		if err := s.failed(); err != nil {
			return n, fmt.Errorf("netshape: write: %w", err)
		}
		s.closeMu.Lock()
		closed := s.closed
		s.closeMu.Unlock()
		if closed {
			return n, net.ErrClosed
		}
		m := min(len(b), chunkSize)
		now := time.Now()
		var sent time.Time
		if s.p.BitsPerSecond > 0 {
			floor := now.Add(-max(burstTime, s.p.TransferTime(minBurst)))
			if s.next.Before(floor) {
				s.next = floor
			}
			s.next = s.next.Add(s.p.TransferTime(int64(m)))
			// The burst lets the bucket's clock lag; the chunk still
			// cannot leave before now, and its delay counts from then.
			sent = s.next
			if sent.Before(now) {
				sent = now
			}
			if ahead := time.Until(sent); ahead > slack {
				time.Sleep(ahead)
			}
		} else {
			sent = now
		}
		due := sent.Add(s.p.OneWay())
		buf := make([]byte, m)
		copy(buf, b[:m])
		select {
		case s.q <- chunk{b: buf, due: due}:
		case <-s.shutdown:
			return n, net.ErrClosed
		}
		n += m
		b = b[m:]
	}
	return n, nil
}

// Close delivers what is still in the delay line (waiting at most
// flushTimeout, then dropping the rest) and closes the connection.
func (s *Conn) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return net.ErrClosed
	}
	s.closed = true
	s.closeMu.Unlock()
	var aborted bool
	var once sync.Once
	abort := func() {
		once.Do(func() {
			aborted = true
			close(s.shutdown)
			_ = s.Conn.Close() // unblocks a pump stuck on a peer that does not read
		})
	}
	t := time.AfterFunc(flushTimeout, abort)
	s.wmu.Lock() // a Write in progress finishes (or sees shutdown) first
	close(s.q)
	s.wmu.Unlock()
	<-s.done
	t.Stop()
	once.Do(func() {})
	if aborted {
		return errors.New("netshape: close: peer did not take the delayed bytes in time")
	}
	return s.Conn.Close()
}

const flushTimeout = 5 * time.Second

// Profile returns the link the connection is shaped to.
func (s *Conn) Profile() Profile { return s.p }

type listener struct {
	net.Listener
	p Profile
}

// WrapListener shapes every accepted connection (what the accepting side
// writes) according to p.
func WrapListener(l net.Listener, p Profile) net.Listener {
	if p.Unshaped() {
		return l
	}
	return &listener{Listener: l, p: p}
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return Wrap(c, l.p), nil
}

// Dial dials addr and shapes what the dialling side writes.
func Dial(ctx context.Context, network, addr string, p Profile) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("netshape: dial %s: %w", addr, err)
	}
	return Wrap(c, p), nil
}

// TCPPair returns the two ends of a fresh loopback TCP connection on
// 127.0.0.1 (Nagle off), both shaped by p: each direction has the
// profile's bandwidth and one-way delay on its own.
func TCPPair(p Profile) (a, b net.Conn, err error) {
	a, b, err = loopback.Pair()
	if err != nil {
		return nil, nil, fmt.Errorf("netshape: %w", err)
	}
	return Wrap(a, p), Wrap(b, p), nil
}
