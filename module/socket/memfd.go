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

// mapped lists the read-only slab mappings this process holds, with the
// memfd each was mapped from where it was kept for handing on (-1 else).
var mapped struct {
	sync.RWMutex
	n      atomic.Int32
	ranges []mapping
}

type mapping struct {
	start, end uintptr
	fd         int
}

// mappedTotal counts the slab mappings made (MappedSlabs).
var mappedTotal atomic.Uint64

// MappedSlabs is how many slabs this process has mapped from memfds.
func MappedSlabs() uint64 { return mappedTotal.Load() }

func addMapped(b []byte, fd int) {
	mappedTotal.Add(1)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	mapped.Lock()
	mapped.ranges = append(mapped.ranges, mapping{p, p + uintptr(len(b)), fd})
	mapped.n.Add(1)
	mapped.Unlock()
}

// dropMapped forgets b's mapping and returns its kept fd (-1: none).
func dropMapped(b []byte) int {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	mapped.Lock()
	defer mapped.Unlock()
	for i, r := range mapped.ranges {
		if r.start == p {
			last := len(mapped.ranges) - 1
			mapped.ranges[i] = mapped.ranges[last]
			mapped.ranges = mapped.ranges[:last]
			mapped.n.Add(-1)
			return r.fd
		}
	}
	return -1
}

// keepFD records fd as the memfd b (a whole mapping) was mapped from, for
// TakeSlabFD; the mapping then owns it.
func keepFD(b []byte, fd int) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	mapped.Lock()
	defer mapped.Unlock()
	for i, r := range mapped.ranges {
		if r.start == p {
			mapped.ranges[i].fd = fd
			return
		}
	}
	closeFD(fd)
}

// TakeSlabFD hands on the sealed memfd that b, exactly a whole slab
// mapping, was mapped from: the caller owns the fd returned and the
// mapping keeps none, so each slab's memfd is handed on at most once. ok
// is false when b is not a whole mapping or its fd is gone or was
// handed on already.
func TakeSlabFD(b []byte) (fd int, ok bool) {
	if len(b) == 0 || mapped.n.Load() == 0 {
		return -1, false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	mapped.Lock()
	defer mapped.Unlock()
	for i, r := range mapped.ranges {
		if r.start == p {
			if r.end != p+uintptr(len(b)) || r.fd < 0 {
				return -1, false
			}
			mapped.ranges[i].fd = -1
			return r.fd, true
		}
	}
	return -1, false
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
		if p >= r.start && p < r.end {
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

// CloseFD closes an fd TakeSlabFD handed out, where it is not passed on.
func CloseFD(fd int) { closeFD(fd) }
