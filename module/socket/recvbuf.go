package socket

import (
	"io"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"
)

// RecvBuf is the buffer a collecting response was read into: the keys of
// its slabs (and the outputs of a range collect) are slices of it. It is
// counted: the results of the Do that read it hold one reference; a
// holder of views into it takes its own (Hold) and gives it back
// (Release) once it has wiped them. When the last reference goes, the
// buffer is wiped (all of it, except the key regions whose holders
// promised to wipe them: KeysWiped) and kept for a later response, so a
// batch's response does not allocate (and zero) a fresh slab-sized buffer.
// A reference never released only leaves the buffer to the garbage
// collector, as before pooling.
type RecvBuf struct {
	b    []byte
	refs atomic.Int32
	mu   sync.Mutex
	// wiped are regions [off, off+n) of b that every holder wipes before
	// releasing (a slab's keys): the last release skips them.
	wiped [][2]int
	// maps: read-only slab mappings (memfd_linux.go) whose keys the
	// results hold, unmapped by the last release.
	maps *mapSet
}

// Hold takes a reference.
func (r *RecvBuf) Hold() {
	if r != nil {
		r.refs.Add(1)
	}
}

// Release gives back a reference; the last one wipes the buffer and
// returns it to the pool. The caller must not use its views after.
func (r *RecvBuf) Release() {
	if r == nil {
		return
	}
	switch n := r.refs.Add(-1); {
	case n > 0:
		return
	case n < 0:
		panic("socket: RecvBuf released more often than held")
	}
	r.mu.Lock()
	w := r.wiped
	r.wiped = nil
	r.mu.Unlock()
	wipeExcept(r.b, w)
	putRecv(r.b)
	r.b = nil
	r.maps.unmap()
}

// KeysWiped records that keys, a slice of the buffer, is wiped by its
// holders before they release it (a slab's keys, each job wiping its own
// part): the last release then does not wipe it a second time. A slice
// that is not within the buffer is ignored (the buffer is wiped whole).
func (r *RecvBuf) KeysWiped(keys []byte) {
	if r == nil || len(keys) == 0 || len(r.b) == 0 {
		return
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(r.b)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(keys)))
	if p < base || p+uintptr(len(keys)) > base+uintptr(len(r.b)) {
		return
	}
	off := int(p - base)
	r.mu.Lock()
	r.wiped = append(r.wiped, [2]int{off, off + len(keys)})
	r.mu.Unlock()
}

// wipeExcept clears b except the regions in skip (which may overlap).
func wipeExcept(b []byte, skip [][2]int) {
	if len(skip) == 0 {
		clear(b)
		return
	}
	sort.Slice(skip, func(i, j int) bool { return skip[i][0] < skip[j][0] })
	at := 0
	for _, s := range skip {
		if s[0] > at {
			clear(b[at:s[0]])
		}
		at = max(at, s[1])
	}
	clear(b[at:])
}

// recvPool keeps wiped response buffers (all zero up to their length).
var recvPool struct {
	sync.Mutex
	free  [][]byte
	bytes int
}

// Bounds on the pool: a few batches' responses in flight per party.
const (
	maxRecvFree      = 16
	maxRecvFreeBytes = 64 << 20
)

// getRecv returns a buffer of length n: a pooled one when one is large
// enough (and not more than about twice as large), else a fresh one. Pooled buffers are zero up to their length.
func getRecv(n int) []byte {
	recvPool.Lock()
	best := -1
	for i, b := range recvPool.free {
		// Not one far larger than needed: a response whose buffer is
		// never released (a per-key range collect) would take it away.
		if cap(b) >= n && cap(b) <= 2*n+4096 && (best < 0 || cap(b) < cap(recvPool.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := recvPool.free[best]
		// In order: free stays oldest first (putRecv drops from the front).
		recvPool.free = slices.Delete(recvPool.free, best, best+1)
		recvPool.bytes -= cap(b)
		recvPool.Unlock()
		return b[:n]
	}
	recvPool.Unlock()
	// Room to spare: the responses of one shape differ by a few bytes
	// (varint lengths, error strings), and a buffer made exactly for one
	// would not take the next one a byte longer.
	return make([]byte, n, recvCap(n))
}

// recvCap is the capacity of a fresh buffer for n bytes: n and 1/32 more,
// rounded up to a multiple of 4 KiB.
func recvCap(n int) int { return (n + n/32 + 4095) &^ 4095 }

// putRecv pools b, which the caller has wiped. A full pool drops its
// oldest buffer for b, so that it follows the shapes in use: a pool full
// of one shape's buffers would otherwise refuse every buffer of a larger
// shape, each of whose responses then allocated (and zeroed) a fresh one.
func putRecv(b []byte) {
	recvPool.Lock()
	defer recvPool.Unlock()
	if cap(b) > maxRecvFreeBytes {
		return
	}
	for len(recvPool.free) > 0 && (len(recvPool.free) >= maxRecvFree || recvPool.bytes+cap(b) > maxRecvFreeBytes) {
		recvPool.bytes -= cap(recvPool.free[0])
		n := copy(recvPool.free, recvPool.free[1:])
		recvPool.free[n] = nil
		recvPool.free = recvPool.free[:n]
	}
	recvPool.free = append(recvPool.free, b)
	recvPool.bytes += cap(b)
}

// readMsgPooled reads one message into a pooled buffer (see RecvBuf) and
// returns it with one reference.
func readMsgPooled(r io.Reader) (*RecvBuf, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	return readBodyPooled(r, h)
}

// readBodyPooled is readMsgPooled once the length prefix h is read.
func readBodyPooled(r io.Reader, h [4]byte) (*RecvBuf, error) {
	n, err := msgLen(h)
	if err != nil {
		return nil, err
	}
	b := getRecv(int(n))
	if _, err := io.ReadFull(r, b); err != nil {
		clear(b)
		putRecv(b)
		return nil, shortMsg(err)
	}
	rb := &RecvBuf{b: b}
	rb.refs.Store(1)
	return rb, nil
}
