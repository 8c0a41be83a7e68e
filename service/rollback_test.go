package service

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// swappable is a party's module socket whose daemon is restarted under
// it (from the same or another state file): each call goes to the module
// running now.
type swappable struct {
	mu  sync.Mutex
	cur socket.Module
}

func (s *swappable) now() socket.Module   { s.mu.Lock(); defer s.mu.Unlock(); return s.cur }
func (s *swappable) swap(m socket.Module) { s.mu.Lock(); s.cur = m; s.mu.Unlock() }

func (s *swappable) Provision(ctx context.Context, r *msg.ProvisionRequest) (*msg.ProvisionResponse, error) {
	return s.now().Provision(ctx, r)
}
func (s *swappable) Submit(ctx context.Context, r *msg.SubmitRequest) (*msg.SubmitResponse, error) {
	return s.now().Submit(ctx, r)
}
func (s *swappable) Poll(ctx context.Context, r *msg.PollRequest) (*msg.PollResponse, error) {
	return s.now().Poll(ctx, r)
}
func (s *swappable) Collect(ctx context.Context, r *msg.CollectRequest) (*msg.CollectResponse, error) {
	return s.now().Collect(ctx, r)
}
func (s *swappable) Challenge(ctx context.Context) ([]byte, error) { return s.now().Challenge(ctx) }
func (s *swappable) Witness(ctx context.Context, c []byte) ([]byte, error) {
	return s.now().Witness(ctx, c)
}
func (s *swappable) Reconcile(ctx context.Context, w []byte) (*module.Reconciled, error) {
	return s.now().Reconcile(ctx, w)
}
func (s *swappable) Do(ctx context.Context, calls []socket.Call, stop bool) ([]socket.Result, error) {
	return s.now().Do(ctx, calls, stop)
}

// syncDoneTrap is party 1's end of a peer session that drops its first
// SyncDone while armed: party 0's handshake fails after its module has
// reconciled party 1's witness.
type syncDoneTrap struct {
	grpc.ServerStream
	armed *atomic.Bool
}

func (s *syncDoneTrap) SendMsg(m any) error {
	if m.(*pb.PeerMsg).GetSyncDone() != nil && s.armed.CompareAndSwap(true, false) {
		return nil
	}
	return s.ServerStream.SendMsg(m)
}

// TestRollbackCountedWhenHandshakeFails: module 0's state file is set back
// to an older copy; the handshake that finds it fails after module 0 has
// reconciled (its SyncDone never comes). The rollback is counted all the
// same (kord_rollbacks_detected_total): the module moved forward for good,
// and the next handshake's reconciliation finds nothing left to report.
func TestRollbackCountedWhenHandshakeFails(t *testing.T) {
	dir := t.TempDir()
	secret := []byte("provisioning secret for tests!!")
	path0 := filepath.Join(dir, "m0.db")
	d1, st1 := openModule(t, 1, filepath.Join(dir, "m1.db"), secret)
	d0, st0 := openModule(t, 0, path0, secret)
	t.Cleanup(func() { st1.Close() })
	mod0 := &swappable{cur: socket.Local(d0)}
	down := &killable{Module: socket.Local(d0)}
	down.dead.Store(true)
	// restart stops module 0's daemon, runs f on its state file, and starts
	// it again from that file.
	var stCur interface{ Close() error } = st0
	restart := func(f func()) {
		mod0.swap(down)
		if err := stCur.Close(); err != nil {
			t.Fatal(err)
		}
		f()
		d, st := openModule(t, 0, path0, secret)
		stCur = st
		mod0.swap(socket.Local(d))
	}
	t.Cleanup(func() { stCur.Close() })

	armed := new(atomic.Bool)
	cfg := Config{Batch: 8, InFlight: 2, PeerTimeout: 500 * time.Millisecond}
	s1 := startParty1(t, "", socket.Local(d1), cfg, func(ss grpc.ServerStream) grpc.ServerStream {
		return &syncDoneTrap{ServerStream: ss, armed: armed}
	})
	s0 := startSite(t, 0, mod0, s1.addr, cfg)
	if err := s0.app.Pair(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := [2]*site{s0, s1}
	p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 8}
	streamBound(t, s, 1, 40, "", p)
	var old []byte
	restart(func() {
		var err error
		if old, err = os.ReadFile(path0); err != nil {
			t.Fatal(err)
		}
	})
	streamBound(t, s, 1000, 200, "", p) // well past module 0's reservation window
	armed.Store(true)
	restart(func() {
		if err := os.WriteFile(path0, old, 0o600); err != nil {
			t.Fatal(err)
		}
	})
	// An idle session notices the restart at its next module call: one
	// request pair (whatever its answer) makes it, and the next handshake
	// finds the rollback. That handshake fails (the trap); a later one
	// comes up and the pair serves again.
	_, poke := boundRequests(p, 1500, 1, "")
	for b := range 2 {
		st, err := s[b].app.Stream(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SendBatch(poke[b]); err != nil {
			t.Fatal(err)
		}
		go st.Recv()
		t.Cleanup(func() { st.CloseSend() })
	}
	for deadline := time.Now().Add(time.Minute); armed.Load() || !s0.party.peerUp.Load(); {
		if time.Now().After(deadline) {
			t.Fatalf("no session after the restore (trap fired: %v)", !armed.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	streamBound(t, s, 2000, 40, "", p)
	var m dto.Metric
	if err := s0.party.m.rollbacks.Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetCounter().GetValue(); got != 1 {
		t.Fatalf("kord_rollbacks_detected_total = %v at party 0, want 1: the rollback found by a handshake that failed was lost", got)
	}
}
