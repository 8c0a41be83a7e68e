package service

import (
	"context"
	"fmt"
	"time"

	pb "github.com/kord-fss/kord/proto/kordpb"
)

// A peer that withholds a message the honest party waits for must cost it
// a timeout, never a stall: the handshakes' reads and party 1's wait for
// a confirmation end after PeerTimeout, the session ends, and what it left
// open is settled as for any lost session (docs/session.md, "Deadlines").

// recvd is one read of a peer link.
type recvd struct {
	m   *pb.PeerMsg
	err error
}

// recvWithin reads link's next message, failing once d has passed (d ≤ 0:
// no deadline) or ctx has ended. After a failure the read goes on in the
// background until the link ends: the caller must end the session.
func recvWithin(ctx context.Context, link peerLink, d time.Duration, what string) (*pb.PeerMsg, error) {
	ch := make(chan recvd, 1)
	go func() {
		m, err := link.Recv()
		ch <- recvd{m, err}
	}()
	return waitRecv(ctx, ch, d, what)
}

// waitRecv waits for a read on ch as recvWithin does.
func waitRecv(ctx context.Context, ch <-chan recvd, d time.Duration, what string) (*pb.PeerMsg, error) {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case r := <-ch:
		return r.m, r.err
	case <-timeout:
		return nil, fmt.Errorf("%w: no %s from the peer within %v", errDesync, what, d)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// reader reads link into the returned channel until a read fails or ctx
// ends (party 1's session: its handshake and its wait for confirmations
// read with deadlines, which a blocked Recv of a gRPC server stream does
// not honour).
func reader(ctx context.Context, link peerLink) <-chan recvd {
	ch := make(chan recvd)
	go func() {
		for {
			m, err := link.Recv()
			select {
			case ch <- recvd{m, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// holding reports whether party 1 holds a batch waiting for its
// confirmation.
func (p *Party) holding() bool {
	p.heldMu.Lock()
	defer p.heldMu.Unlock()
	return len(p.held) > 0
}

// heldOverdue reports whether party 1's oldest held batch has waited for
// its confirmation longer than d.
func (p *Party) heldOverdue(d time.Duration) (uint64, bool) {
	p.heldMu.Lock()
	defer p.heldMu.Unlock()
	if len(p.held) == 0 || p.held[0].at.IsZero() {
		return 0, false
	}
	return p.held[0].seq, time.Since(p.held[0].at) > d
}

// expireQueued (party 0) fails the queued requests that have waited
// longer than d while no peer session has been up for d either (the peer
// is unreachable, or withholds its handshake): unavailable (α reusable),
// or spent for a request of a batch lost with its session that party 1's
// module may have opened (doubt). It returns how many it failed.
func (p *Party) expireQueued(d time.Duration) int {
	if p.peerUp.Load() || time.Since(time.Unix(0, p.downAt.Load())) <= d {
		return 0
	}
	gone := p.q.expire(time.Now().Add(-d))
	for _, j := range gone {
		if j.doubt {
			// Recorded before the application is told (Party.back).
			if !p.ledger.answered([]rid{{j.app, j.id}}, ErrClassSpent) {
				continue // going down: the restarted party answers it
			}
			j.fail(ErrClassSpent, "request %d: no peer session within %v after the batch it was in was lost, which party 1's module may have opened; α spent: choose a fresh α", j.id, d)
			p.logSpent(j)
			p.m.rejects.WithLabelValues(ErrClassSpent).Inc()
			continue
		}
		j.fail(ErrClassUnavailable, "request %d: no peer session within %v (the peer is unreachable or did not complete the handshake); nothing was generated for it", j.id, d)
		p.m.rejects.WithLabelValues(ErrClassUnavailable).Inc()
	}
	if len(gone) > 0 {
		p.m.pending.Set(float64(p.q.size()))
	}
	return len(gone)
}
