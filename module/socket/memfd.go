package socket

import (
	"io"
	"sync"

	"sync/atomic"
	"unsafe"

	"github.com/kord-fss/kord/module/msg"
)

// A slab's keys may cross the socket as a sealed memfd (Linux:
// memfd_linux.go): the module writes them into it once and seals it, the
// party maps it read-only and reads them in place. Such keys cannot be
// wiped by the party (the mapping is read-only, the memfd sealed): the
// kernel frees the pages once the module's and the party's last
// references go. WipeKeys is the party's wipe, which leaves them alone.

// mapped lists the read-only slab mappings this process holds.
var mapped struct {
	sync.RWMutex
	n      atomic.Int32
	ranges [][2]uintptr
}

// mappedTotal counts the slab mappings made (MappedSlabs).
var mappedTotal atomic.Uint64

// MappedSlabs is how many slabs this process has mapped from memfds.
func MappedSlabs() uint64 { return mappedTotal.Load() }

func addMapped(b []byte) {
	mappedTotal.Add(1)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	mapped.Lock()
	mapped.ranges = append(mapped.ranges, [2]uintptr{p, p + uintptr(len(b))})
	mapped.n.Add(1)
	mapped.Unlock()
}

func dropMapped(b []byte) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	mapped.Lock()
	for i, r := range mapped.ranges {
		if r[0] == p {
			last := len(mapped.ranges) - 1
			mapped.ranges[i] = mapped.ranges[last]
			mapped.ranges = mapped.ranges[:last]
			mapped.n.Add(-1)
			break
		}
	}
	mapped.Unlock()
}

// IsMapped reports whether b lies in a read-only slab mapping.
func IsMapped(b []byte) bool {
	if len(b) == 0 || mapped.n.Load() == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	mapped.RLock()
	defer mapped.RUnlock()
	for _, r := range mapped.ranges {
		if p >= r[0] && p < r[1] {
			return true
		}
	}
	return false
}

// WipeKeys clears key bytes, unless they are in a read-only slab mapping
// (sealed: unwritable by anyone; the kernel frees them once unmapped).
func WipeKeys(b []byte) {
	if !IsMapped(b) {
		clear(b)
	}
}

// WipeSlab wipes a slab at the party: its shares, and its keys as
// WipeKeys does.
func WipeSlab(s *msg.Slab) {
	if s == nil {
		return
	}
	clear(s.AlphaShares)
	clear(s.BetaShares)
	WipeKeys(s.Keys)
}

func readFull(r io.Reader, b []byte) (int, error) { return io.ReadFull(r, b) }
