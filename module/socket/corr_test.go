package socket

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/modulepb"
)

// corrOver asks both modules behind cs for correlation c and collects
// both parties' shares over the sockets.
func corrOver(t *testing.T, cs [2]*Client, c msg.Correlation) [2]*msg.CorrShares {
	t.Helper()
	ctx := context.Background()
	var first [2]uint64
	for b := 0; b < 2; b++ {
		r, err := cs[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitCorrelation, Corr: &c})
		if err != nil {
			t.Fatalf("party %d: submit: %v", b, err)
		}
		first[b] = r.FirstCounter
	}
	if first[0] != first[1] {
		t.Fatalf("the modules put the correlation at counters %d and %d", first[0], first[1])
	}
	var sh [2]*msg.CorrShares
	for b := 0; b < 2; b++ {
		r, err := cs[b].Collect(ctx, &msg.CollectRequest{Counter: first[b], Corr: true})
		if err != nil || r.Corr == nil {
			t.Fatalf("party %d: collect: %v", b, err)
		}
		sh[b] = r.Corr
		// Handed out once: a repeat is refused, naming the counter.
		if _, err := cs[b].Collect(ctx, &msg.CollectRequest{Counter: first[b], Corr: true}); !errors.Is(err, module.ErrBadRequest) {
			t.Fatalf("party %d: a repeated correlation collect gave %v, want a bad request", b, err)
		}
	}
	if sh[0].PairTag != sh[1].PairTag {
		t.Fatal("the two shares' pair tags differ")
	}
	return sh
}

// open adds two parties' shares mod 2^ring.
func open(a, b []uint64, ring int) []uint64 {
	m := ^uint64(0) >> (64 - ring)
	out := make([]uint64, len(a))
	for i := range a {
		out[i] = (a[i] + b[i]) & m
	}
	return out
}

// conv is the cleartext stride-1 unpadded convolution of msg.CorrConv2D.
func conv(c msg.Correlation, a, r []uint64) []uint64 {
	oh, ow := c.H-c.K+1, c.W-c.K+1
	z := make([]uint64, c.Out*oh*ow)
	for o := 0; o < c.Out; o++ {
		for y := 0; y < oh; y++ {
			for x := 0; x < ow; x++ {
				var s uint64
				for i := 0; i < c.In; i++ {
					for ky := 0; ky < c.K; ky++ {
						for kx := 0; kx < c.K; kx++ {
							s += a[((o*c.In+i)*c.K+ky)*c.K+kx] * r[(i*c.H+y+ky)*c.W+x+kx]
						}
					}
				}
				z[(o*oh+y)*ow+x] = s
			}
		}
	}
	return z
}

// Derived correlations through the module socket and the durable module:
// a weight mask kept, then two input correlations against it; opened,
// Z = conv(A, R) exactly, and the input masks are fresh.
func TestSocketCorrelation(t *testing.T) {
	cs, _ := servedPair(t)
	ctx := context.Background()
	for _, ring := range []int{13, 32, 64} {
		c := msg.Correlation{Kind: msg.CorrConv2D, Ring: ring, In: 2, Out: 3, K: 3, H: 5, W: 6, Part: msg.CorrWeight}
		w := corrOver(t, cs, c)
		if len(w[0].R) != 0 || len(w[0].A) != 2*3*9 {
			t.Fatalf("ℓ=%d: weight answer has %d words of A and %d of R", ring, len(w[0].A), len(w[0].R))
		}
		a := open(w[0].A, w[1].A, ring)
		before, _ := cs[0].Poll(ctx, nil)
		var rs [][]uint64
		for range 2 {
			in := c
			in.Part, in.WeightFrom = msg.CorrInput, w[0].Counter
			sh := corrOver(t, cs, in)
			r := open(sh[0].R, sh[1].R, ring)
			z := open(sh[0].Z, sh[1].Z, ring)
			want := conv(c, a, r)
			for i := range want {
				if want[i]&(^uint64(0)>>(64-ring)) != z[i] {
					t.Fatalf("ℓ=%d: Z[%d] = %d, conv(A, R) = %d", ring, i, z[i], want[i])
				}
			}
			rs = append(rs, r)
		}
		same := true
		for i := range rs[0] {
			same = same && rs[0][i] == rs[1][i]
		}
		if same {
			t.Fatalf("ℓ=%d: two input correlations drew the same mask", ring)
		}
		after, _ := cs[0].Poll(ctx, nil)
		in := c
		in.Part = msg.CorrInput
		blocks, _ := in.Blocks()
		if after.NextCounter-before.NextCounter != 2*uint64(blocks) {
			t.Fatalf("ℓ=%d: two input correlations took %d counters, want 2×%d", ring, after.NextCounter-before.NextCounter, blocks)
		}
	}
}

// A malformed correlation gets a bad-request error naming the field and
// moves no counter.
func TestSocketCorrelationBadInput(t *testing.T) {
	cs, _ := servedPair(t)
	ctx := context.Background()
	before, _ := cs[0].Poll(ctx, nil)
	for _, c := range []msg.Correlation{
		{Kind: 9, Ring: 16, In: 2, Out: 2},
		{Kind: msg.CorrMatVec, Ring: 0, In: 2, Out: 2},
		{Kind: msg.CorrConv2D, Ring: 16, In: 1, Out: 1, K: 7, H: 5, W: 5},
		{Kind: msg.CorrMatVec, Ring: 16, In: 2, Out: 2, Part: msg.CorrInput, WeightFrom: 12345},
		{Kind: msg.CorrMatVec, Ring: 16, In: 1 << 30, Out: 2},
	} {
		_, err := cs[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitCorrelation, Corr: &c})
		if !errors.Is(err, module.ErrBadRequest) {
			t.Fatalf("%+v: got %v, want a bad request", c, err)
		}
	}
	if _, err := cs[0].Collect(ctx, &msg.CollectRequest{Counter: 77, Corr: true}); !errors.Is(err, module.ErrBadRequest) {
		t.Fatalf("collect of no correlation: %v", err)
	}
	after, _ := cs[0].Poll(ctx, nil)
	if after.NextCounter != before.NextCounter {
		t.Fatalf("refused correlations moved the counter from %d to %d", before.NextCounter, after.NextCounter)
	}
}

// FuzzCorrSharesFromPB: any wire CorrShares is refused or converted with
// A, R and Z of exactly the sizes its shape gives; never a panic.
func FuzzCorrSharesFromPB(f *testing.F) {
	c := msg.Correlation{Kind: msg.CorrConv2D, Ring: 20, In: 1, Out: 2, K: 2, H: 3, W: 3, Part: msg.CorrInput, WeightFrom: 4}
	blocks, _ := c.Blocks()
	b, _ := proto.Marshal(&pb.CorrShares{Counter: 9, Blocks: uint32(blocks), Corr: CorrToPB(&c), R: make([]uint64, 9), Z: make([]uint64, 8), PairTag: make([]byte, 16)})
	f.Add(b)
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m pb.CorrShares
		if proto.Unmarshal(raw, &m) != nil {
			return
		}
		sh, err := CorrSharesFromPB(&m)
		if err != nil {
			return
		}
		na, nr, nz, err := sh.Corr.Sizes()
		if err != nil {
			t.Fatalf("accepted a bad shape %+v: %v", sh.Corr, err)
		}
		switch sh.Corr.Part {
		case msg.CorrWeight:
			nr, nz = 0, 0
		case msg.CorrInput:
			na = 0
		}
		if len(sh.A) != na || len(sh.R) != nr || len(sh.Z) != nz {
			t.Fatalf("accepted %d/%d/%d words for %+v", len(sh.A), len(sh.R), len(sh.Z), sh.Corr)
		}
	})
}
