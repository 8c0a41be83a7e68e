package socket

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/modulepb"
)

// fakeDev answers Collect with outputs derived from the counter (counters
// from 1000 up are not ready), Poll with a fixed status and refuses Submit.
type fakeDev struct{}

func (fakeDev) Provision(context.Context, *msg.ProvisionRequest) (*msg.ProvisionResponse, error) {
	return nil, module.ErrBadRequest
}
func (fakeDev) Submit(context.Context, *msg.SubmitRequest) (*msg.SubmitResponse, error) {
	return nil, errors.New("no")
}
func (fakeDev) Poll(context.Context, *msg.PollRequest) (*msg.PollResponse, error) {
	return &msg.PollResponse{NextCounter: 5}, nil
}
func (fakeDev) Collect(_ context.Context, r *msg.CollectRequest) (*msg.CollectResponse, error) {
	c := r.Counter
	if c >= 1000 {
		return nil, module.ErrBadRequest
	}
	out := &msg.CollectResponse{Counter: c, Mode: msg.Mode(c % 3)}
	switch c % 3 {
	case 1: // derived
		out.Key = bytes.Repeat([]byte{byte(c)}, int(50+c%7))
		out.AlphaShare, out.BetaShare = c<<40|c, c*3
	case 2: // consume
		for _, x := range r.Points {
			out.Evals = append(out.Evals, x*c)
		}
	default:
		out.Key = bytes.Repeat([]byte{byte(c) ^ 0x5a}, int(300+c%5))
	}
	return out, nil
}

// TestHandleAppendSameBytes: the response of a request ending in a collect
// range is the bytes appendMsg writes for Handle's response.
func TestHandleAppendSameBytes(t *testing.T) {
	s := NewServer(fakeDev{}, ServerOptions{})
	rng := rand.New(rand.NewPCG(7, 8))
	rangeCall := func(first uint64, n int, consume bool) *pb.Call {
		r := &CollectRange{First: first, Count: n}
		if consume {
			r.Points = make([][]uint64, n)
			for i := range r.Points {
				if (first+uint64(i))%3 == 2 {
					r.Points[i] = []uint64{uint64(i), 7}
				}
			}
		}
		return &pb.Call{Op: &pb.Call_CollectRange{CollectRange: rangeToPB(r)}}
	}
	var buf []byte
	for it := 0; it < 300; it++ {
		first := uint64(rng.IntN(1100))
		n := 1 + rng.IntN(300)
		if it%5 == 0 {
			n = 1 + rng.IntN(3)
		}
		var calls []*pb.Call
		switch it % 4 {
		case 1:
			calls = append(calls, &pb.Call{Op: &pb.Call_Poll{Poll: &pb.PollRequest{}}})
		case 2:
			calls = append(calls, &pb.Call{Op: &pb.Call_PeerFrames{PeerFrames: &pb.PeerFramesRequest{Data: []byte{1}, Lens: []uint32{1}}}})
		case 3:
			calls = append(calls, &pb.Call{Op: &pb.Call_CollectRange{CollectRange: &pb.CollectRangeRequest{First: 1, Count: 0}}})
		}
		calls = append(calls, rangeCall(first, n, it%2 == 0))
		req := &pb.ModuleRequest{Calls: calls, StopOnError: it%3 == 0}
		b, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		want, err := appendMsg(nil, s.Handle(context.Background(), b))
		if err != nil {
			t.Fatal(err)
		}
		var out []byte
		buf, out, err = s.handleAppend(context.Background(), b, buf[:0])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("request %d (%d calls, first %d, count %d): %d bytes, want %d", it, len(calls), first, n, len(out), len(want))
		}
	}
	for _, b := range [][]byte{{0xff}, nil} {
		want, _ := appendMsg(nil, s.Handle(context.Background(), b))
		_, out, err := s.handleAppend(context.Background(), b, nil)
		if err != nil || !bytes.Equal(out, want) {
			t.Fatalf("malformed request: %x, want %x (%v)", out, want, err)
		}
	}
}
