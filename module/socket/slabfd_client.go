package socket

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"

	pb "github.com/kord-fss/kord/proto/modulepb"
)

// maxSlabFDs bounds the fds taken with one response (one per slab).
const maxSlabFDs = 64

// mapSet holds a response's read-only slab mappings; unmap (idempotent)
// runs at the buffer's last release, or, for a buffer never released, at
// its collection (runtime.AddCleanup).
type mapSet struct {
	mu   sync.Mutex
	maps [][]byte
}

func (m *mapSet) unmap() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, b := range m.maps {
		unmapSlab(b)
	}
	m.maps = nil
}

// addMap attaches a mapping to r.
func (r *RecvBuf) addMap(b []byte) {
	if r.maps == nil {
		r.maps = &mapSet{}
		runtime.AddCleanup(r, (*mapSet).unmap, r.maps)
	}
	r.maps.mu.Lock()
	r.maps.maps = append(r.maps.maps, b)
	r.maps.mu.Unlock()
}

// UseSlabFDs turns on or off asking the module for slabs as sealed
// memfds (where SlabFDSupported; off by default: on the 2-core VM a
// fresh memfd per slab cost more CPU than the bytes, BENCHMARKS.md).
func (c *Client) UseSlabFDs(on bool) { c.fds.Store(on) }

// SlabFDs reports whether the client asks for slabs as memfds.
func (c *Client) SlabFDs() bool { return SlabFDSupported && c.fds.Load() }

// slabFDsFailed turns the memfd path off after an error (logged once):
// later slabs come as bytes.
func (c *Client) slabFDsFailed(err error) {
	if c.fds.Swap(false) {
		slog.Warn("socket: a slab memfd failed; taking slabs as bytes from now on", "err", err)
	}
}

// isSlabCollect reports whether cl collects a bulk's slab.
func isSlabCollect(cl *Call) bool {
	return cl.Collect != nil && cl.Collect.Count > 0 && !cl.Collect.Corr && len(cl.Collect.Points) == 0
}

// readMsgFDs reads one message into a pooled buffer with the fds passed
// with it (each slab of the response with keys_fd, in order).
func readMsgFDs(cn net.Conn) (*RecvBuf, []int, error) {
	var h [4]byte
	fds, err := readFullFDs(cn, h[:], nil, maxSlabFDs)
	if err != nil {
		closeFDs(fds)
		return nil, nil, err
	}
	rb, err := readBodyPooled(cn, h)
	if err != nil {
		closeFDs(fds)
		return nil, nil, err
	}
	return rb, fds, nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		closeFD(fd)
	}
}

// mapSlabFDs maps, read-only, the memfd of each slab of resp with
// keys_fd (fds in order) as that slab's keys, checking its seals and
// size (mapSealed); the mappings go with rb. Each mapped slab keeps its
// fd (closed with the mapping unless TakeSlabFD hands it on); every other
// fd is closed. An error leaves no mapping in resp's slabs.
func mapSlabFDs(resp *pb.ModuleResponse, fds []int, rb *RecvBuf) error {
	next := 0
	defer func() { closeFDs(fds[next:]) }()
	for _, r := range resp.Results {
		s := r.GetCollect().GetSlab()
		if s == nil || !s.KeysFd {
			continue
		}
		if len(s.Keys) > 0 {
			return fmt.Errorf("%w: a slab with keys both inline and in an fd", ErrTransport)
		}
		if next == len(fds) {
			return fmt.Errorf("%w: a slab's keys in an fd, but no fd came with the response", ErrTransport)
		}
		size := uint64(s.GetN()) * uint64(s.GetStride())
		if size == 0 || size > MaxMessage {
			return fmt.Errorf("%w: slab fd: %d keys of %d bytes", ErrTransport, s.GetN(), s.GetStride())
		}
		m, err := mapSealed(fds[next], int(size))
		if err != nil {
			return err
		}
		keepFD(m, fds[next])
		next++
		rb.addMap(m)
		s.Keys = m
	}
	if next != len(fds) {
		return fmt.Errorf("%w: %d fds for %d slabs in fds", ErrTransport, len(fds), next)
	}
	return nil
}

// unmapCopies replaces the mapped keys of out's slabs with copies on the
// heap and drops rb's mappings (a Do whose caller expects plain bytes).
func unmapCopies(out []Result, rb *RecvBuf) {
	if rb == nil || rb.maps == nil {
		return
	}
	for i := range out {
		if c := out[i].Collect; c != nil && c.Slab != nil && IsMapped(c.Slab.Keys) {
			c.Slab.Keys = bytes.Clone(c.Slab.Keys)
		}
	}
	rb.maps.unmap()
}
