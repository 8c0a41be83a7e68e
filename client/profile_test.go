package client_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/fss/llama"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// TestLlamaAcrossParties: llama-profile keys from two real parties over
// gRPC, through Get (bound) and a stream mixing profiles (llama derived as
// a bulk, llama bound, kord-v1 derived, sent packed): every llama pair is
// handed out as LLAMA's bytes and evaluates to β·[x < α] with LLAMA's
// evaluation; the kord-v1 keys beside them still parse and pair.
func TestLlamaAcrossParties(t *testing.T) {
	cl := startParties(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := rand.New(rand.NewPCG(41, 42))
	p := fss.Params{Type: fss.DCF, InBits: 32, OutBits: 32}
	lp := msg.LlamaParams(p)
	m := prg.Mask(32)

	// Get, bound: both sites ask at once.
	alpha, beta := r.Uint64()&m, r.Uint64()&m
	a0, b0 := r.Uint64()&m, r.Uint64()&m
	reqs := [2]*pb.KeyRequest{
		client.WithProfile(client.Bound(1, msg.MAC, p, a0, b0), msg.Llama),
		client.WithProfile(client.Bound(1, msg.MAC, p, (alpha-a0)&m, (beta-b0)&m), msg.Llama),
	}
	reps := both(t, func(b int) (*client.Reply, error) { return cl[b].Get(ctx, reqs[b]) })
	for b := range 2 {
		if reps[b].Err != nil {
			t.Fatalf("site %d: %v", b, reps[b].Err)
		}
		if reps[b].Shares[0].Key != nil || len(reps[b].Shares[0].Raw) != lp.KeySize() {
			t.Fatalf("site %d: a llama share as %d raw bytes (parsed key %v)", b, len(reps[b].Shares[0].Raw), reps[b].Shares[0].Key != nil)
		}
	}
	if err := llama.CheckPair(lp, reps[0].Shares[0].Raw, reps[1].Shares[0].Raw, alpha, []uint64{beta}); err != nil {
		t.Fatal(err)
	}

	// A stream mixing profiles.
	const derivedN = 40
	var sreqs [2][]*pb.KeyRequest
	for b := range 2 {
		sreqs[b] = append(sreqs[b], client.WithProfile(client.Derived(10, p, derivedN, 1, false), msg.Llama))
		sreqs[b] = append(sreqs[b], client.Derived(11, p, 3, 0, true))
	}
	alpha2, beta2 := r.Uint64()&m, r.Uint64()&m
	sreqs[0] = append(sreqs[0], client.WithProfile(client.Bound(12, 0, p, 5, 6), msg.Llama))
	sreqs[1] = append(sreqs[1], client.WithProfile(client.Bound(12, 0, p, (alpha2-5)&m, (beta2-6)&m), msg.Llama))
	var streams [2]*client.Stream
	for b := range 2 {
		st, err := cl[b].Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SendBatch(sreqs[b]); err != nil {
			t.Fatal(err)
		}
		defer st.CloseSend()
		streams[b] = st
	}
	var got [2]map[uint64]*client.Reply
	for b := range 2 {
		got[b] = map[uint64]*client.Reply{}
		for len(got[b]) < 3 {
			rep, err := streams[b].Recv()
			if err != nil {
				t.Fatal(err)
			}
			if rep.Err != nil {
				t.Fatalf("site %d reply %d: %v", b, rep.ID, rep.Err)
			}
			got[b][rep.ID] = rep
		}
	}
	d0, d1 := got[0][10].Shares, got[1][10].Shares
	if len(d0) != derivedN || len(d1) != derivedN {
		t.Fatalf("derived llama: %d and %d keys", len(d0), len(d1))
	}
	for i := range d0 {
		a := (d0[i].AlphaShare + d1[i].AlphaShare) & m
		if err := llama.CheckPair(lp, d0[i].Raw, d1[i].Raw, a, []uint64{1}); err != nil {
			t.Fatalf("derived llama key %d: %v", i, err)
		}
	}
	if err := llama.CheckPair(lp, got[0][12].Shares[0].Raw, got[1][12].Shares[0].Raw, alpha2, []uint64{beta2}); err != nil {
		t.Fatalf("streamed bound llama key: %v", err)
	}
	k0, k1 := got[0][11].Shares, got[1][11].Shares
	for i := range k0 {
		a := (k0[i].AlphaShare + k1[i].AlphaShare) & m
		bb := (k0[i].BetaShare + k1[i].BetaShare) & m
		if k0[i].Key == nil || k0[i].Raw != nil {
			t.Fatal("a kord-v1 key beside llama ones came back unparsed")
		}
		if err := fss.CheckPair(k0[i].Key, k1[i].Key, a, bb, a, (a+1)&m, (a-1)&m); err != nil {
			t.Fatalf("kord-v1 key %d: %v", i, err)
		}
	}
}

// TestLlamaRequestRefused: the party names what is wrong with a llama
// request it cannot serve.
func TestLlamaRequestRefused(t *testing.T) {
	cl := startParties(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		r    *pb.KeyRequest
		want string
	}{
		{client.WithProfile(client.Derived(1, fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}, 1, 1, false), msg.Llama), "llama profile has only dcf"},
		{&pb.KeyRequest{Id: 2, Mode: "derived", Type: "dcf", InBits: 8, OutBits: 8, Profile: "llama3"}, "profile"},
	} {
		rep, err := cl[0].Get(ctx, c.r)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Err == nil || !contains(rep.Err.Error(), c.want) {
			t.Fatalf("%+v: got %v, want an error naming %q", c.r, rep.Err, c.want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestProfileMismatchRefused: two sites asking for one id with different
// profiles get no keys: the profile is part of the batch item the parties
// compare.
func TestProfileMismatchRefused(t *testing.T) {
	cl := startParties(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := fss.Params{Type: fss.DCF, InBits: 16, OutBits: 16}
	reqs := [2]*pb.KeyRequest{
		client.WithProfile(client.Derived(7, p, 1, 1, false), msg.Llama),
		client.Derived(7, p, 1, 1, false),
	}
	var reps [2]*client.Reply
	var errs [2]error
	var wg sync.WaitGroup
	for b := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); reps[b], errs[b] = cl[b].Get(ctx, reqs[b]) }()
	}
	wg.Wait()
	for b := range 2 {
		if errs[b] == nil && reps[b].Err == nil {
			t.Fatalf("site %d got keys for a request whose profile the other site did not ask for", b)
		}
		t.Logf("site %d: %v %v", b, errs[b], reps[b].Err)
	}
}

// TestLlamaConsumeAcrossParties: a consume-mode llama key stays in the
// modules; the two sites' evaluation shares add up to β·[x < α].
func TestLlamaConsumeAcrossParties(t *testing.T) {
	cl := startParties(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := fss.Params{Type: fss.DCF, InBits: 20, OutBits: 24}
	const alpha, beta = 700000, 0xabcdef
	points := []uint64{0, alpha - 1, alpha, alpha + 1, 1<<20 - 1}
	reqs := [2]*pb.KeyRequest{
		client.WithProfile(client.Consume(3, msg.MAC, p, 100, 200, points), msg.Llama),
		client.WithProfile(client.Consume(3, msg.MAC, p, alpha-100, beta-200, points), msg.Llama),
	}
	reps := both(t, func(b int) (*client.Reply, error) { return cl[b].Get(ctx, reqs[b]) })
	for b := range 2 {
		if reps[b].Err != nil {
			t.Fatalf("site %d: %v", b, reps[b].Err)
		}
	}
	e0, e1 := reps[0].Shares[0].Evals, reps[1].Shares[0].Evals
	for i, x := range points {
		want := uint64(0)
		if x < alpha {
			want = beta
		}
		if got := (e0[i] + e1[i]) & prg.Mask(24); got != want {
			t.Fatalf("f(%d) = %d, want %d", x, got, want)
		}
	}
}
