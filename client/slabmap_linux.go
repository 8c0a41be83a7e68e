package client

import (
	"fmt"
	"math/bits"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kord-fss/kord/module/socket"
)

// A message's keys that came as a sealed memfd (PackedReplies.keys_fd)
// are mapped read-only into a region of address space reserved for such
// keys. When the batch is released its region is mapped over with zero
// pages, which gives the memfd's pages back and keeps Batch's promise
// for views used after Release: their bytes read zero, so they are
// refused, until the region serves a later message. Regions are kept by
// size class for reuse (a stream's messages are of a few sizes), so the
// address space they take stays bounded by the batches alive at once.

// regionsPerClass bounds the free regions kept per size class; past it a
// released region is unmapped.
const regionsPerClass = 64

var regions struct {
	sync.Mutex
	free map[int][][]byte // by region size
}

var pageSize = os.Getpagesize()

// regionSize is the region a mapping of size bytes takes: a power of two
// of at least 64 KiB.
func regionSize(size int) int {
	if size <= 64<<10 {
		return 64 << 10
	}
	return 1 << bits.Len(uint(size-1))
}

// mapSlab maps fd, which must be a memfd of exactly size bytes carrying
// every seal (socket.CheckSealed), read-only; release gives the mapping
// back. fd stays the caller's.
func mapSlab(fd, size int) (keys []byte, release func(), err error) {
	if err := socket.CheckSealed(fd, size); err != nil {
		return nil, nil, err
	}
	rs := regionSize(size)
	region := takeRegion(rs)
	if region == nil {
		region, err = unix.Mmap(-1, 0, rs, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return nil, nil, fmt.Errorf("client: reserving %d bytes for a slab: %w", rs, err)
		}
	}
	base := unsafe.Pointer(unsafe.SliceData(region))
	if _, err := unix.MmapPtr(fd, 0, base, uintptr(size), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED|unix.MAP_POPULATE); err != nil {
		putRegion(region, size)
		return nil, nil, fmt.Errorf("client: mapping a slab's memfd: %w", err)
	}
	var once sync.Once
	return region[:size:size], func() { once.Do(func() { putRegion(region, size) }) }, nil
}

// putRegion maps zero pages over the first used bytes of region (its
// memfd mapping, if any) and keeps it for reuse.
func putRegion(region []byte, used int) {
	n := (used + pageSize - 1) &^ (pageSize - 1)
	base := unsafe.Pointer(unsafe.SliceData(region))
	if _, err := unix.MmapPtr(-1, 0, base, uintptr(n), unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED); err != nil {
		_ = unix.Munmap(region)
		return
	}
	regions.Lock()
	defer regions.Unlock()
	if regions.free == nil {
		regions.free = map[int][][]byte{}
	}
	if l := regions.free[len(region)]; len(l) < regionsPerClass {
		regions.free[len(region)] = append(l, region)
		return
	}
	_ = unix.Munmap(region)
}

func takeRegion(size int) []byte {
	regions.Lock()
	defer regions.Unlock()
	l := regions.free[size]
	if len(l) == 0 {
		return nil
	}
	r := l[len(l)-1]
	regions.free[size] = l[:len(l)-1]
	return r
}
