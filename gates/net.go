package gates

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/kord-fss/kord/internal/netshape"
)

// MaxFrame bounds one received frame (64 MiB); a longer length prefix is an
// error, so a corrupt or hostile peer cannot make us allocate without bound.
const MaxFrame = 64 << 20

// Conn is one party's end of the online channel: a stream connection (TCP
// in kord) carrying length-prefixed frames. Each online round is one
// Exchange: both parties send one frame and read the other's. Conn counts
// the bytes it writes to the socket (frame headers included) and the
// rounds, which is how the cost table measures online communication.
type Conn struct {
	c      net.Conn
	mu     sync.Mutex
	sent   int64
	rounds int64
}

// NewConn wraps an established stream connection.
func NewConn(c net.Conn) *Conn { return &Conn{c: c} }

// Close closes the underlying connection.
func (c *Conn) Close() error { return c.c.Close() }

// Sent returns the bytes written so far (payload plus 4-byte headers).
func (c *Conn) Sent() int64 { c.mu.Lock(); defer c.mu.Unlock(); return c.sent }

// Rounds returns the number of exchanges so far.
func (c *Conn) Rounds() int64 { c.mu.Lock(); defer c.mu.Unlock(); return c.rounds }

// ResetCounters zeroes the byte and round counters.
func (c *Conn) ResetCounters() { c.mu.Lock(); c.sent, c.rounds = 0, 0; c.mu.Unlock() }

// Exchange sends msg and returns the peer's frame of the same round. The
// write runs concurrently with the read so large frames cannot deadlock on
// full socket buffers.
func (c *Conn) Exchange(msg []byte) ([]byte, error) {
	if len(msg) > MaxFrame {
		return nil, fmt.Errorf("gates: frame of %d bytes exceeds %d", len(msg), MaxFrame)
	}
	werr := make(chan error, 1)
	go func() {
		buf := make([]byte, 4+len(msg))
		binary.BigEndian.PutUint32(buf, uint32(len(msg)))
		copy(buf[4:], msg)
		n, err := c.c.Write(buf)
		c.mu.Lock()
		c.sent += int64(n)
		c.mu.Unlock()
		werr <- err
	}()
	var hdr [4]byte
	_, rerr := io.ReadFull(c.c, hdr[:])
	var in []byte
	if rerr == nil {
		n := binary.BigEndian.Uint32(hdr[:])
		if n > MaxFrame {
			rerr = fmt.Errorf("gates: peer frame of %d bytes exceeds %d", n, MaxFrame)
		} else {
			in = make([]byte, n)
			_, rerr = io.ReadFull(c.c, in)
		}
	}
	if err := <-werr; err != nil {
		return nil, fmt.Errorf("gates: send: %w", err)
	}
	if rerr != nil {
		return nil, fmt.Errorf("gates: receive: %w", rerr)
	}
	c.mu.Lock()
	c.rounds++
	c.mu.Unlock()
	return in, nil
}

// TCPPair returns the two ends of a fresh loopback TCP connection on
// 127.0.0.1 (Nagle off), for running both parties in one process.
func TCPPair() (c0, c1 *Conn, err error) {
	a, b, err := netshape.TCPPair(netshape.Profile{}) // unshaped
	if err != nil {
		return nil, nil, fmt.Errorf("gates: %w", err)
	}
	return NewConn(a), NewConn(b), nil
}

// Party is one side of an online evaluation: its index b (0 or 1) and its
// connection to the other party.
type Party struct {
	B    int
	Conn *Conn
}

// errPeer reports a malformed message from the other party.
var errPeer = errors.New("gates: malformed message from peer")

// open reconstructs masked values: for each vector vecs[i] of this party's
// shares of width widths[i] bits, it sends the shares, receives the peer's
// and returns the sums mod 2^width. All vectors travel in one frame (one
// round), bit-packed.
func (p *Party) open(widths []int, vecs ...[]uint64) ([][]uint64, error) {
	if len(widths) != len(vecs) {
		return nil, errors.New("gates: open: widths and vectors differ in number")
	}
	total := 0
	for i, v := range vecs {
		total += len(v) * widths[i]
	}
	w := bitWriter{buf: make([]byte, 0, (total+7)/8)}
	for i, v := range vecs {
		for _, x := range v {
			w.put(x, widths[i])
		}
	}
	in, err := p.Conn.Exchange(w.flush())
	if err != nil {
		return nil, err
	}
	if len(in) != (total+7)/8 {
		return nil, fmt.Errorf("%w: %d bytes, want %d", errPeer, len(in), (total+7)/8)
	}
	r := bitReader{buf: in}
	out := make([][]uint64, len(vecs))
	for i, v := range vecs {
		m := mask(widths[i])
		out[i] = make([]uint64, len(v))
		for j, x := range v {
			out[i][j] = (x + r.get(widths[i])) & m
		}
	}
	return out, nil
}

type bitWriter struct {
	buf  []byte
	acc  uint64
	nacc int
}

func (w *bitWriter) put(x uint64, bits int) {
	for bits > 0 {
		take := min(bits, 8) // w.nacc < 8 here, so acc never overflows
		w.acc |= (x & mask(take)) << uint(w.nacc)
		w.nacc += take
		x >>= uint(take)
		bits -= take
		for w.nacc >= 8 {
			w.buf = append(w.buf, byte(w.acc))
			w.acc >>= 8
			w.nacc -= 8
		}
	}
}

func (w *bitWriter) flush() []byte {
	if w.nacc > 0 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc, w.nacc = 0, 0
	}
	return w.buf
}

type bitReader struct {
	buf []byte
	pos int // bit position
}

func (r *bitReader) get(bits int) uint64 {
	var x uint64
	for i := 0; i < bits; {
		byteIdx, off := r.pos/8, r.pos%8
		take := min(8-off, bits-i)
		var b uint64
		if byteIdx < len(r.buf) {
			b = uint64(r.buf[byteIdx]>>uint(off)) & mask(take)
		}
		x |= b << uint(i)
		i += take
		r.pos += take
	}
	return x
}

// mask returns 2^bits − 1 (all ones for 64).
func mask(bits int) uint64 {
	if bits >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(bits) - 1
}
