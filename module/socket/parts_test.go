package socket

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/modulepb"
)

// slabDev answers a slab collect with a slab made from the counter
// (CollectSlab, the copying path); counters from 1000 up fail.
type slabDev struct{ fakeDev }

func testSlab(first uint64, n int) *msg.Slab {
	p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 8}
	st := 40 + int(first%5)
	sl := &msg.Slab{First: first, N: n, Mode: msg.Derived, Params: p, Stride: st, Keys: bytes.Repeat([]byte{byte(first) | 1}, n*st),
		PairTags: bytes.Repeat([]byte{byte(first) ^ 0x33}, n*msg.PairTagSize), Group: int(first % 2)}
	if first%3 != 0 {
		sl.Mode = msg.Bound
	} else {
		for i := range n {
			sl.AlphaShares = append(sl.AlphaShares, first<<20|uint64(i))
			sl.BetaShares = append(sl.BetaShares, uint64(i)*0x1234567)
		}
	}
	return sl
}

func (slabDev) CollectSlab(_ context.Context, first uint64, count int, emit func(*msg.Slab)) error {
	if first >= 1000 {
		return errors.New("no such bulk")
	}
	emit(testSlab(first, count))
	return nil
}

// pinDev is slabDev that also pins (slabPinner): the server writes the
// keys from the slab itself; it counts the releases.
type pinDev struct {
	slabDev
	pinned, released int
	last             *msg.Slab
}

func (d *pinDev) CollectSlabPinned(_ context.Context, first uint64, count int, emit func(*msg.Slab)) (func(), error) {
	if first >= 1000 {
		return func() {}, errors.New("no such bulk")
	}
	d.last = testSlab(first, count)
	d.pinned++
	emit(d.last)
	return func() { d.released++ }, nil
}

// TestSlabPartsSameBytes: for a pinning module, the parts the server
// writes are, joined, the bytes of the copying path (appendSlab, which
// TestHandleAppendSameBytes ties to proto.Marshal), the keys part is the
// module's slab itself (no copy), and every pin is released once.
func TestSlabPartsSameBytes(t *testing.T) {
	copying := NewServer(slabDev{}, ServerOptions{})
	pd := &pinDev{}
	pinning := NewServer(pd, ServerOptions{})
	rng := rand.New(rand.NewPCG(3, 4))
	var buf []byte
	for it := 0; it < 200; it++ {
		first := uint64(rng.IntN(1100))
		n := 1 + rng.IntN(200)
		var calls []*pb.Call
		switch it % 3 {
		case 1:
			calls = append(calls, &pb.Call{Op: &pb.Call_Poll{Poll: &pb.PollRequest{}}})
		case 2:
			calls = append(calls, &pb.Call{Op: &pb.Call_Submit{Submit: &pb.SubmitRequest{}}}) // refused
		}
		calls = append(calls, &pb.Call{Op: &pb.Call_Collect{Collect: &pb.CollectRequest{Counter: first, Count: uint32(n)}}})
		req := &pb.ModuleRequest{Calls: calls, StopOnError: it%4 == 0}
		b, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		_, want, err := copying.handleAppend(context.Background(), b, nil)
		if err != nil {
			t.Fatal(err)
		}
		pd.last = nil
		before := pd.released
		var parts [][]byte
		var release func()
		buf, parts, release, _, err = pinning.handleParts(context.Background(), b, buf[:0])
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Join(parts, nil); !bytes.Equal(got, want) {
			t.Fatalf("request %d (first %d, count %d): %d bytes, want %d", it, first, n, len(got), len(want))
		}
		if pd.last != nil && len(parts) > 1 && &parts[1][0] != &pd.last.Keys[0] {
			t.Fatalf("request %d: the keys part is not the module's slab", it)
		}
		release()
		if pd.released-before != 1 && pd.last != nil {
			t.Fatalf("request %d: %d releases", it, pd.released-before)
		}
	}
	if pd.pinned == 0 || pd.pinned != pd.released {
		t.Fatalf("%d pins, %d releases", pd.pinned, pd.released)
	}
}

// TestRecvPoolFollowsShapes: a response a few bytes longer than the last
// reuses its buffer, and once the pool is full of one size, buffers of a
// larger size replace the oldest instead of being dropped (each larger
// response would otherwise allocate); pooled buffers are zero.
func TestRecvPoolFollowsShapes(t *testing.T) {
	recvPool.Lock()
	saved := recvPool.free
	savedBytes := recvPool.bytes
	recvPool.free, recvPool.bytes = nil, 0
	recvPool.Unlock()
	defer func() {
		recvPool.Lock()
		recvPool.free, recvPool.bytes = saved, savedBytes
		recvPool.Unlock()
	}()
	b := getRecv(575530)
	b[0], b[len(b)-1] = 1, 2
	clear(b)
	putRecv(b)
	if c := getRecv(575538); &c[0] != &b[0] {
		t.Fatal("a response 8 bytes longer did not reuse the pooled buffer")
	} else {
		putRecv(c)
	}
	small := make([][]byte, maxRecvFree)
	for i := range small {
		small[i] = getRecv(575530)
	}
	for _, x := range small {
		putRecv(x)
	}
	for range maxRecvFree {
		putRecv(getRecv(712700))
	}
	recvPool.Lock()
	n := len(recvPool.free)
	large := 0
	for _, x := range recvPool.free {
		if cap(x) >= 712700 {
			large++
		}
		if slices.ContainsFunc(x[:cap(x)], func(v byte) bool { return v != 0 }) {
			t.Error("a pooled buffer is not zero")
		}
	}
	recvPool.Unlock()
	if n > maxRecvFree || large == 0 {
		t.Fatalf("%d pooled, %d of the larger shape", n, large)
	}
	x := getRecv(712700)
	y := getRecv(712700)
	if len(x) != 712700 || &x[0] == &y[0] {
		t.Fatal("bad buffers")
	}
}
