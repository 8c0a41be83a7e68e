package service

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kord-fss/kord/module/moduletest"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/proto/modulepb"
)

// otherShapeModule is a lying host 0's module access: its first
// correlation submission asks the module for another shape of as many
// counters (so the modules stay in step), and the collected shares are
// relabelled with the shape the batch names, so that the rest of party
// 0's code goes on as if they were the honest ones. It records the
// confirmation hash such a host could compute over its own module's tags.
type otherShapeModule struct {
	socket.Module
	other msg.Correlation
	done  atomic.Bool
	mu    sync.Mutex
	asked map[uint64]msg.Correlation // counter → the shape the host named
	conf  []byte
	words []uint64 // every word its module handed out for the other shape
}

func (m *otherShapeModule) Do(ctx context.Context, calls []socket.Call, stop bool) ([]socket.Result, error) {
	var named *msg.Correlation
	for i, c := range calls {
		if c.Submit != nil && c.Submit.Kind == msg.SubmitCorrelation && m.done.CompareAndSwap(false, true) {
			named = c.Submit.Corr
			o := *c.Submit
			o.Corr = &m.other
			calls = append([]socket.Call(nil), calls...)
			calls[i].Submit = &o
		}
	}
	res, err := m.Module.Do(ctx, calls, stop)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range res {
		if named != nil && r.Submit != nil && r.Err == nil {
			m.asked[r.Submit.FirstCounter] = *named
		}
		if r.Collect != nil && r.Collect.Corr != nil {
			if c, ok := m.asked[r.Collect.Corr.Counter]; ok {
				sh := r.Collect.Corr
				for _, v := range [][]uint64{sh.A, sh.R, sh.Z} {
					m.words = append(m.words, v...)
				}
				r.Collect.Corr.Corr = c
				h := newTagHashes(r.Collect.Corr.Counter)
				h.Write(r.Collect.Corr.PairTag[:])
				m.conf = h.confirmation()
			}
		}
	}
	return res, err
}

// recordCorrs keeps a copy of every correlation word an honest party 1's
// module hands out, so the test can compare the attacker's words with
// party 1's masks, delivered or not.
type recordCorrs struct {
	socket.Module
	mu    sync.Mutex
	words map[uint64]bool
}

func (m *recordCorrs) Do(ctx context.Context, calls []socket.Call, stop bool) ([]socket.Result, error) {
	res, err := m.Module.Do(ctx, calls, stop)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range res {
		if r.Collect != nil && r.Collect.Corr != nil {
			sh := r.Collect.Corr
			for _, v := range [][]uint64{sh.A, sh.R, sh.Z} {
				for _, w := range v {
					m.words[w] = true
				}
			}
		}
	}
	return res, err
}

// TestConfirmDespiteMismatchedTags is the confirmation attack of issue
// 32: host 0 has its module draw another correlation shape at the
// counters of party 1's (and gets no word of party 1's masks among its
// shares), and confirms the batch anyway — with no
// confirmation, with the confirmation of its own module's tags, or with
// party 1's digest. Party 1 delivers nothing of the batch (it counts a
// pair mismatch and requeues the request, as party 0 does); the session
// resynchronises and the request's next draw is delivered at both sites,
// at one counter, and satisfies its relation.
func TestConfirmDespiteMismatchedTags(t *testing.T) {
	honest := &modulepb.Correlation{Kind: uint32(msg.CorrMatVec), Ring: 64, In: 8, Out: 2}
	// Full, 2·16 + 2·1 + 16 = 50 words: the honest shape's 25 counters.
	other := msg.Correlation{Kind: msg.CorrMatVec, Ring: 64, In: 1, Out: 16}
	for _, forge := range []string{"none", "own-tags", "peer-digest"} {
		t.Run(forge, func(t *testing.T) {
			d := moduletest.DurablePair(t, 0)
			m0 := &otherShapeModule{Module: socket.Local(d[0]), other: other, asked: map[uint64]msg.Correlation{}}
			var digest atomic.Pointer[[]byte]
			var forged atomic.Int32
			tap := func(m *pb.PeerMsg) {
				if c := m.GetConfirm(); c != nil && !c.Ok && forged.Add(1) == 1 {
					c.Ok, c.ErrorClass = true, ""
					switch forge {
					case "own-tags":
						m0.mu.Lock()
						c.Mac = m0.conf
						m0.mu.Unlock()
					case "peer-digest":
						if d := digest.Load(); d != nil {
							c.Mac = *d
						}
					}
				}
			}
			// Party 1's digest of the batch, as host 0 reads it on the link.
			tap1 := func(m *pb.PeerMsg) {
				if r := m.GetBatchReply(); r != nil && len(r.Digest) > 0 {
					b := append([]byte(nil), r.Digest...)
					digest.Store(&b)
				}
			}
			m1 := &recordCorrs{Module: socket.Local(d[1]), words: map[uint64]bool{}}
			lp, err := NewLocalPair([2]socket.Module{m0, m1}, Config{Batch: 4, InFlight: 1}, LocalLink{Tap: tap, Tap1: tap1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(lp.Close)
			req := func(id uint64) [2][]*pb.KeyRequest {
				return [2][]*pb.KeyRequest{{{Id: id, Mode: ModeCorrelation, Corr: honest}}, {{Id: id, Mode: ModeCorrelation, Corr: honest}}}
			}
			// The attacked batch is refused at both sites; a correlation
			// moves no α and opens no frame, so both requeue it and the next
			// session draws it afresh (not swapped again).
			ans := requestBoth(t, lp, req(1))
			if forged.Load() == 0 {
				t.Fatal("party 0 never refused the batch: the shapes were not swapped")
			}
			m0.mu.Lock()
			m1.mu.Lock()
			if len(m0.words) == 0 {
				t.Fatal("party 0's module handed out no word for the other shape")
			}
			// Neither a word nor a difference of two words (party 1's
			// share is a drawn word minus party 0's drawn share) of the
			// other shape is a word of party 1's shares.
			for _, x := range m0.words {
				if m1.words[x] {
					t.Fatal("the other shape drawn at party 1's counters holds a word of party 1's masks")
				}
				for _, y := range m0.words {
					if m1.words[x-y] {
						t.Fatal("two words of the other shape give a word of party 1's masks")
					}
				}
			}
			m1.mu.Unlock()
			m0.mu.Unlock()
			if n := lp.Parties[1].pairMismatches.Load(); n == 0 {
				t.Fatal("party 1 took the forged confirmation without counting a pair mismatch")
			}
			a0, a1 := ans[0][0], ans[1][0]
			if a0.ErrorClass != "" || a1.ErrorClass != "" || len(a0.Outputs) != 1 || len(a1.Outputs) != 1 {
				t.Fatalf("correlation after the attack: %q / %q", a0.Error, a1.Error)
			}
			s0, s1 := a0.Outputs[0].Corr, a1.Outputs[0].Corr
			m0.mu.Lock()
			_, attacked := m0.asked[s1.Counter]
			m0.mu.Unlock()
			if attacked || s0.Counter != s1.Counter || s0.PairTag != s1.PairTag {
				t.Fatalf("party 1 delivered the correlation at counter %d (party 0's at %d, attacked: %v)", s1.Counter, s0.Counter, attacked)
			}
			for o := range 2 {
				var z uint64
				for i := range 8 {
					z += (s0.A[o*8+i] + s1.A[o*8+i]) * (s0.R[i] + s1.R[i])
				}
				if s0.Z[o]+s1.Z[o] != z {
					t.Fatalf("Z[%d] does not satisfy Z = A·R", o)
				}
			}
		})
	}
}
