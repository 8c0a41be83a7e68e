package mpspdzrun

import (
	"context"
	"fmt"
	"sync"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/host"
	"github.com/kord-fss/kord/mpspdz"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Local draws from an in-process module pair (host.LocalPair): both
// players' shares.
type Local struct{ Pair *host.LocalPair }

// Concurrent implements Source: the in-process pair is asked one
// request at a time.
func (Local) Concurrent() bool { return false }

// Draw implements Source.
func (l Local) Draw(ctx context.Context, _ uint64, k mpspdz.Kind, n int) (out [mpspdz.Players][]uint64, err error) {
	c, err := mpspdz.Shape(k, n)
	if err != nil {
		return out, err
	}
	sh, err := l.Pair.Correlation(ctx, c)
	if err != nil {
		return out, err
	}
	defer func() { sh[0].Wipe(); sh[1].Wipe() }()
	for p := range out {
		if out[p], err = mpspdz.FromCorr(nil, k, sh[p]); err != nil {
			return out, err
		}
	}
	return out, nil
}

// Daemons draws through the party daemons: Apps[p] is site p's
// application client, nil for a site not asked. Both sites' exports must
// send the same requests with the same ids: request seq has id FirstID +
// seq. Draws may run concurrently (Options.InFlight).
type Daemons struct {
	Apps    [mpspdz.Players]*client.Client
	FirstID uint64
}

// Concurrent implements Source.
func (d *Daemons) Concurrent() bool { return true }

// Draw implements Source: one request (client.Tuples or
// client.MatrixTriple) to each asked site, concurrently.
func (d *Daemons) Draw(ctx context.Context, seq uint64, k mpspdz.Kind, n int) (out [mpspdz.Players][]uint64, err error) {
	c, err := mpspdz.Shape(k, n)
	if err != nil {
		return out, err
	}
	id := d.FirstID + seq
	req := client.Correlation(id, c)
	var errs [mpspdz.Players]error
	var wg sync.WaitGroup
	for p, app := range d.Apps {
		if app == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[p], errs[p] = draw(ctx, app, req, k)
		}()
	}
	wg.Wait()
	for p, e := range errs {
		if e != nil {
			return out, fmt.Errorf("site %d: %w", p, e)
		}
	}
	return out, nil
}

// draw sends one request to one site and lays its shares out.
func draw(ctx context.Context, app *client.Client, req *pb.KeyRequest, k mpspdz.Kind) ([]uint64, error) {
	r, err := app.Get(ctx, req)
	if err != nil {
		return nil, err
	}
	if r.Err != nil {
		return nil, r.Err
	}
	if len(r.Shares) != 1 || r.Shares[0].Corr == nil {
		return nil, fmt.Errorf("request %d: a reply without correlation shares", r.ID)
	}
	sh := r.Shares[0].Corr
	defer sh.Wipe()
	return mpspdz.FromCorr(nil, k, sh)
}

// Dealer draws from a trusted in-process dealer (mpspdz.Dealer): the
// reference a benchmark sets the module pair against.
type Dealer struct{ D *mpspdz.Dealer }

// Concurrent implements Source.
func (Dealer) Concurrent() bool { return false }

// Draw implements Source.
func (d Dealer) Draw(_ context.Context, _ uint64, k mpspdz.Kind, n int) ([mpspdz.Players][]uint64, error) {
	return d.D.Tuples(k, n)
}
