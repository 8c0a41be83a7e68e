package socket

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/modulepb"
)

// recordingFDs makes real sealed memfds and remembers the bytes each
// was made from.
type recordingFDs struct {
	mu   sync.Mutex
	made [][]byte
}

func (r *recordingFDs) Make(keys []byte) (int, error) {
	r.mu.Lock()
	r.made = append(r.made, bytes.Clone(keys))
	r.mu.Unlock()
	return sealedMemfd(keys)
}
func (r *recordingFDs) Close(fd int) { closeFD(fd) }

// slabs returns the bytes of the memfds made so far. Make runs in the
// server's goroutine, and the fd's way back through the kernel is no
// synchronisation the race detector sees: read under the lock.
func (r *recordingFDs) slabs() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.made)
}

// servedPairFDs is servedPair with module 0's server recording its
// memfds.
func servedPairFDs(t *testing.T) ([2]*Client, *recordingFDs) {
	t.Helper()
	cs, ds := servedPair(t)
	rec := &recordingFDs{}
	path := t.TempDir() + "/s"
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(ds[0], ServerOptions{Access: Access{SameUID: true}})
	srv.memfds = rec
	go srv.Serve(l)
	c := Dial(path, 0)
	c.UseSlabFDs(true)
	t.Cleanup(func() { c.Close(); l.Close() })
	cs[0] = c
	return cs, rec
}

func derivedBulk(t *testing.T, cs [2]*Client, n int) uint64 {
	t.Helper()
	var first uint64
	for b := range 2 {
		r, err := cs[b].Submit(context.Background(), &msg.SubmitRequest{Kind: msg.SubmitBulk,
			Bulk: &msg.Bulk{Mode: msg.Derived, Type: 1, InBits: 12, OutBits: 12, N: n, DeriveBeta: true}})
		if err != nil {
			t.Fatal(err)
		}
		first = r.FirstCounter
	}
	return first
}

// TestSlabFDSameBytes: a slab taken as a memfd holds, bit for bit, the
// keys the module wrote into it; it pairs with the peer's slab taken as
// bytes (the keys evaluate to f); a repeated collect maps the same
// bytes; a byte collect of it is refused, naming why; a plain Do hands
// back heap copies.
func TestSlabFDSameBytes(t *testing.T) {
	cs, rec := servedPairFDs(t)
	ctx := context.Background()
	const n = 40
	first := derivedBulk(t, cs, n)
	res, err := cs[0].DoMapped(ctx, []Call{{Collect: &msg.CollectRequest{Counter: first, Count: n}}}, true)
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res[0].Err)
	}
	sl := res[0].Collect.Slab
	if !IsMapped(sl.Keys) {
		t.Fatal("the slab's keys are not a mapping")
	}
	if len(rec.slabs()) != 1 || !bytes.Equal(rec.slabs()[0], sl.Keys) {
		t.Fatalf("mapped keys differ from the bytes the module wrote (%d memfds)", len(rec.slabs()))
	}
	peer, err := cs[1].Collect(ctx, &msg.CollectRequest{Counter: first, Count: n})
	if err != nil {
		t.Fatal(err)
	}
	checkSlabPair(t, [2]*msg.Slab{sl, peer.Slab}, func(i int) (uint64, uint64) {
		return (sl.AlphaShares[i] + peer.Slab.AlphaShares[i]) & prg.Mask(12), (sl.BetaShares[i] + peer.Slab.BetaShares[i]) & prg.Mask(12)
	})
	again, err := cs[0].Do(ctx, []Call{{Collect: &msg.CollectRequest{Counter: first, Count: n}}}, true)
	if err != nil || again[0].Err != nil {
		t.Fatal(err, again[0].Err)
	}
	if k := again[0].Collect.Slab.Keys; IsMapped(k) || !bytes.Equal(k, sl.Keys) {
		t.Fatalf("repeat collect (plain Do): mapped %v, same bytes %v", IsMapped(k), bytes.Equal(k, sl.Keys))
	}
	if len(rec.slabs()) != 1 {
		t.Fatalf("a repeat made another memfd (%d)", len(rec.slabs()))
	}
	again[0].Buf.Release()
	_, err = cs[0].Collect(ctx, &msg.CollectRequest{Counter: first, Count: n})
	if !errors.Is(err, module.ErrBadRequest) || !strings.Contains(err.Error(), "memfd") {
		t.Fatalf("byte collect of a memfd slab: %v", err)
	}
	WipeKeys(sl.Keys) // a no-op on the mapping, not a fault
	res[0].Buf.Release()
	if mapped.n.Load() != 0 {
		t.Fatalf("%d mappings left after the last release", mapped.n.Load())
	}
	// An old party (no slab_fds) gets bytes.
	first = derivedBulk(t, cs, n)
	cs[0].UseSlabFDs(false)
	res, err = cs[0].DoMapped(ctx, []Call{{Collect: &msg.CollectRequest{Counter: first, Count: n}}}, true)
	if err != nil || res[0].Err != nil || IsMapped(res[0].Collect.Slab.Keys) || len(rec.slabs()) != 1 {
		t.Fatalf("byte path: %v %v mapped %v", err, res[0].Err, IsMapped(res[0].Collect.Slab.Keys))
	}
	res[0].Buf.Release()
}

// memfdWithSeals returns a memfd holding b with the given seals.
func memfdWithSeals(t *testing.T, b []byte, seals int) int {
	t.Helper()
	fd, err := unix.MemfdCreate("test", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(fd, b); err != nil {
		t.Fatal(err)
	}
	if seals != 0 {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
			t.Fatal(err)
		}
	}
	return fd
}

// TestSlabFDSealsRefused: the party maps only a memfd with all four
// seals and the size the slab needs; anything else — a memfd the module
// could still write, grow or shrink, or unseal, a plain file — is
// refused.
func TestSlabFDSealsRefused(t *testing.T) {
	keys := bytes.Repeat([]byte{7}, 4096)
	for _, seals := range []int{0, unix.F_SEAL_GROW | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL,
		unix.F_SEAL_WRITE | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL, unix.F_SEAL_WRITE | unix.F_SEAL_GROW | unix.F_SEAL_SEAL,
		unix.F_SEAL_WRITE | unix.F_SEAL_GROW | unix.F_SEAL_SHRINK} {
		fd := memfdWithSeals(t, keys, seals)
		if m, err := mapSealed(fd, len(keys)); err == nil || !strings.Contains(err.Error(), "seals") {
			t.Errorf("seals %#x: mapped (%v)", seals, err)
			if m != nil {
				unmapSlab(m)
			}
		}
		unix.Close(fd)
	}
	fd := memfdWithSeals(t, keys, allSeals)
	if _, err := mapSealed(fd, len(keys)+1); err == nil {
		t.Error("a memfd of the wrong size was mapped")
	}
	m, err := mapSealed(fd, len(keys))
	unix.Close(fd)
	if err != nil || !bytes.Equal(m, keys) {
		t.Fatalf("sealed memfd: %v", err)
	}
	unmapSlab(m)
	f, err := os.CreateTemp(t.TempDir(), "plain")
	if err != nil {
		t.Fatal(err)
	}
	f.Write(keys)
	if _, err := mapSealed(int(f.Fd()), len(keys)); err == nil {
		t.Error("a plain file was mapped")
	}
	f.Close()
}

// TestSlabFDUnsealedFromModule: a module that passes a memfd without the
// seals (it could rewrite the keys after delivery) has the collect
// refused; the client then takes slabs as bytes.
func TestSlabFDUnsealedFromModule(t *testing.T) {
	path := t.TempDir() + "/s"
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := readMsgInto(c, nil); err != nil {
			return
		}
		const stride = 100
		fd := memfdWithSeals(t, make([]byte, stride), unix.F_SEAL_GROW|unix.F_SEAL_SHRINK)
		defer unix.Close(fd)
		resp := &pb.ModuleResponse{Results: []*pb.Result{{Op: &pb.Result_Collect{Collect: &pb.CollectResponse{Counter: 5, Mode: 2,
			Slab: &pb.Slab{First: 5, N: 1, Mode: 2, Type: 1, InBits: 12, OutBits: 12, Stride: stride, KeysFd: true, PairTags: make([]byte, 16)}}}}}}
		b, _ := appendMsg(nil, resp)
		writeWithFD(c, b, fd)
	}()
	c := Dial(path, 0)
	c.UseSlabFDs(true)
	defer c.Close()
	_, err = c.DoMapped(context.Background(), []Call{{Collect: &msg.CollectRequest{Counter: 5, Count: 1}}}, true)
	if !errors.Is(err, ErrTransport) || !strings.Contains(err.Error(), "seals") {
		t.Fatalf("unsealed memfd: %v", err)
	}
	if c.SlabFDs() {
		t.Fatal("the client still asks for memfds after a refused one")
	}
	if mapped.n.Load() != 0 {
		t.Fatal("a refused memfd stayed mapped")
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(es)
}

// TestSlabFDNoLeak: many slabs through the memfd path leave no fd or
// mapping behind but the module's re-collect window (a few slabs).
func TestSlabFDNoLeak(t *testing.T) {
	cs, rec := servedPairFDs(t)
	ctx := context.Background()
	const n, slabs = 4096, 60
	// Warm the connections.
	derivedBulk(t, cs, n)
	before := openFDs(t)
	for i := 0; i < slabs; i++ {
		first := derivedBulk(t, cs, n)
		res, err := cs[0].DoMapped(ctx, []Call{{Collect: &msg.CollectRequest{Counter: first, Count: n}}}, true)
		if err != nil || res[0].Err != nil || !IsMapped(res[0].Collect.Slab.Keys) {
			t.Fatal(err, res[0].Err)
		}
		res[0].Buf.Release()
	}
	if len(rec.slabs()) != slabs {
		t.Fatalf("%d memfds for %d slabs", len(rec.slabs()), slabs)
	}
	after := openFDs(t)
	// The window keeps minSlabs slabs of this size (8192 keys at least:
	// 2 + 2 here), each with its memfd.
	if after-before > 6 {
		t.Fatalf("open fds %d → %d after %d slabs", before, after, slabs)
	}
	if mapped.n.Load() != 0 {
		t.Fatalf("%d mappings left", mapped.n.Load())
	}
}

// TestTakeSlabFDOnce: a kept slab fd is handed on only for exactly its
// whole mapping, and only once; the mapping then no longer closes it,
// and a mapping whose fd was not taken closes it when unmapped.
func TestTakeSlabFDOnce(t *testing.T) {
	keys := bytes.Repeat([]byte{9}, 3*4096)
	fd := memfdWithSeals(t, keys, allSeals)
	m, err := mapSealed(fd, len(keys))
	if err != nil {
		t.Fatal(err)
	}
	keepFD(m, fd)
	if _, ok := TakeSlabFD(m[:len(m)-1]); ok {
		t.Fatal("a part of a slab handed its fd on")
	}
	if _, ok := TakeSlabFD(m[1:]); ok {
		t.Fatal("a part of a slab handed its fd on")
	}
	got, ok := TakeSlabFD(m)
	if !ok || got != fd {
		t.Fatalf("TakeSlabFD = %d, %v; want %d", got, ok, fd)
	}
	if _, ok := TakeSlabFD(m); ok {
		t.Fatal("a slab's fd was handed on twice")
	}
	unmapSlab(m)
	if _, err := unix.FcntlInt(uintptr(got), unix.F_GET_SEALS, 0); err != nil {
		t.Fatalf("unmapping closed the fd handed on: %v", err)
	}
	unix.Close(got)

	fd = memfdWithSeals(t, keys, allSeals)
	if m, err = mapSealed(fd, len(keys)); err != nil {
		t.Fatal(err)
	}
	keepFD(m, fd)
	unmapSlab(m)
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0); err == nil {
		t.Fatal("unmapping left the kept fd open")
	}
}
