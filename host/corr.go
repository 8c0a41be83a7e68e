package host

import (
	"context"
	"fmt"
	"slices"

	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/service"
)

// Correlation asks both parties for one derived multiplication
// correlation of shape c (msg.SubmitCorrelation), as an application asks
// the daemons (client.Correlation): both modules draw the masks and
// compute their product; each party's answer carries only its own shares.
// It returns both parties' shares, checked to pair (same counter and pair
// tag); the caller wipes them once used. A weight mask's Counter is the
// handle later input correlations name (c.WeightFrom).
func (lp *LocalPair) Correlation(ctx context.Context, c msg.Correlation) (sh [2]*msg.CorrShares, err error) {
	id := lp.ids.Add(1)
	r := &pb.KeyRequest{Id: id, Mode: service.ModeCorrelation, Corr: socket.CorrToPB(&c)}
	ans, aerr := lp.ask(ctx, func(b int) (*service.Queued, error) {
		return lp.pair.Enqueue(b, &pb.KeyRequests{Requests: []*pb.KeyRequest{r}})
	})
	defer func() {
		for b := range 2 {
			for i := range ans[b] {
				ans[b][i].Wipe()
			}
		}
		if err != nil {
			sh[0].Wipe()
			sh[1].Wipe()
			sh = [2]*msg.CorrShares{}
		}
	}()
	if aerr != nil {
		return sh, fmt.Errorf("host: correlation: %w", aerr)
	}
	for b := range 2 {
		if len(ans[b]) != 1 {
			return sh, fmt.Errorf("host: correlation: party %d answered %d requests, want 1", b, len(ans[b]))
		}
		a := &ans[b][0]
		if a.ErrorClass != "" {
			return sh, fmt.Errorf("host: correlation: party %d: %s: %s", b, a.ErrorClass, a.Error)
		}
		if len(a.Outputs) != 1 || a.Outputs[0].Corr == nil {
			return sh, fmt.Errorf("host: correlation: party %d answered without correlation shares", b)
		}
		// The answer holds the only copy and is wiped on return: keep a
		// copy of the shares for the caller.
		cs := *a.Outputs[0].Corr
		cs.A, cs.R, cs.Z, cs.Packs = slices.Clone(cs.A), slices.Clone(cs.R), slices.Clone(cs.Z), slices.Clone(cs.Packs)
		sh[b] = &cs
	}
	if sh[0].Counter != sh[1].Counter || sh[0].PairTag != sh[1].PairTag {
		return sh, fmt.Errorf("host: correlation: %w", ErrTampered)
	}
	return sh, nil
}
