package compare

import (
	"context"
	"fmt"
	"net"

	"github.com/kord-fss/kord/host"
	"github.com/kord-fss/kord/internal/netshape"
	"github.com/kord-fss/kord/module/msg"
)

// kordInFlight is the parties' batch size: a source call of up to this
// many keys is one batch.
const kordInFlight = 4096

// kordPair is two freshly paired software modules and the two parties
// of package service over them (host.LocalPair), their peer sessions
// crossing a TCP connection pair through the same shaper as the
// baseline's parties.
type kordPair struct {
	lp *host.LocalPair
}

func newKordPair(ctx context.Context, link netshape.Profile) (*kordPair, error) {
	lp, err := host.NewLocalPair(ctx, host.LocalOptions{InFlight: kordInFlight, Workers: 1,
		PeerConns: func() (net.Conn, net.Conn, error) { return netshape.TCPPair(link) }})
	if err != nil {
		return nil, fmt.Errorf("compare: kord's pair: %w", err)
	}
	return &kordPair{lp: lp}, nil
}

func (kp *kordPair) close() error {
	kp.lp.Close()
	return nil
}

// sent is the frame bytes each party has sent the other so far.
func (kp *kordPair) sent() [2]uint64 { return [2]uint64{kp.lp.SentBytes(0), kp.lp.SentBytes(1)} }

// rounds is the batches the parties have exchanged so far.
func (kp *kordPair) rounds() int { return int(kp.lp.Rounds()) }

// generateN asks both parties for their requests (one batch per
// kordInFlight of them) and returns both parties' results; the pair's
// tags are compared by the LocalPair (host.ErrTampered).
func (kp *kordPair) generateN(ctx context.Context, tier msg.Tier, reqs [2][]host.Request) ([2][]host.Result, error) {
	return kp.lp.Generate(ctx, tier, reqs)
}
