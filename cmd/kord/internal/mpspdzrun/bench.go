package mpspdzrun

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/internal/netshape"
	"github.com/kord-fss/kord/mpspdz"
)

// BenchReport compares the same tuples through the five processes (two
// module daemons, two party daemons, the exporting application) with a
// trusted in-process dealer, in one run, and counts the bytes that cross
// between the sites (the party daemons' peer link, on the real socket).
type BenchReport struct {
	Tuples             int     `json:"tuples"` // per player, all kinds
	Requests           int     `json:"requests"`
	DaemonSeconds      float64 `json:"daemon_seconds"`
	DaemonTuplesPerSec float64 `json:"daemon_tuples_per_sec"`
	DealerSeconds      float64 `json:"dealer_seconds"`
	DealerTuplesPerSec float64 `json:"dealer_tuples_per_sec"`
	Ratio              float64 `json:"daemon_over_dealer"`
	PeerBytes          int64   `json:"peer_bytes"` // during the export (pairing excluded)
	PeerBytesPerTuple  float64 `json:"peer_bytes_per_tuple"`
	PeerBytesPerReq    float64 `json:"peer_bytes_per_request"`
	Verified           bool    `json:"verified"` // both outputs pass mpspdz.Verify
}

// Bench runs the comparison with the kord binary bin ("" = this
// executable) under a scratch directory dir.
func Bench(ctx context.Context, bin, dir string, items []Item, chunk, inFlight int) (*BenchReport, error) {
	var proxy *netshape.Proxy
	if err := os.MkdirAll(filepath.Join(dir, "cluster"), 0o700); err != nil {
		return nil, err
	}
	c, err := cluster.Start(ctx, filepath.Join(dir, "cluster"), cluster.Options{Bin: bin, PeerVia: func(peer string) (string, error) {
		p, err := netshape.NewProxy(peer, netshape.Profile{})
		if err != nil {
			return "", err
		}
		proxy = p
		return p.Addr(), nil
	}})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	defer proxy.Close()
	apps := c.Apps()
	before := proxy.Bytes()
	drep, err := Export(ctx, &Daemons{Apps: apps, FirstID: 1}, Options{Dir: filepath.Join(dir, "daemons"), Items: items, Players: [2]bool{true, true}, Chunk: chunk, InFlight: inFlight})
	if err != nil {
		return nil, fmt.Errorf("through the daemons: %w", err)
	}
	peer := proxy.Bytes() - before
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return nil, err
	}
	d, err := mpspdz.NewDealer(&seed)
	if err != nil {
		return nil, err
	}
	lrep, err := Export(ctx, Dealer{d}, Options{Dir: filepath.Join(dir, "dealer"), Items: items, Players: [2]bool{true, true}, Chunk: chunk})
	if err != nil {
		return nil, fmt.Errorf("dealer: %w", err)
	}
	rep := &BenchReport{Tuples: drep.Tuples, Requests: drep.Requests, DaemonSeconds: drep.Seconds, DaemonTuplesPerSec: drep.TuplesPerSec,
		DealerSeconds: lrep.Seconds, DealerTuplesPerSec: lrep.TuplesPerSec, PeerBytes: peer}
	if lrep.TuplesPerSec > 0 {
		rep.Ratio = drep.TuplesPerSec / lrep.TuplesPerSec
	}
	rep.PeerBytesPerTuple = float64(peer) / float64(drep.Tuples)
	rep.PeerBytesPerReq = float64(peer) / float64(drep.Requests)
	_, e1 := mpspdz.Verify(filepath.Join(dir, "daemons"))
	_, e2 := mpspdz.Verify(filepath.Join(dir, "dealer"))
	if e1 != nil || e2 != nil {
		return rep, fmt.Errorf("verify: %v; %v", e1, e2)
	}
	rep.Verified = true
	os.RemoveAll(filepath.Join(dir, "daemons"))
	os.RemoveAll(filepath.Join(dir, "dealer"))
	return rep, nil
}

// WriteText prints the report.
func (r *BenchReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "tuples per player:      %d in %d requests (verified: %v)\n", r.Tuples, r.Requests, r.Verified)
	fmt.Fprintf(w, "five processes:         %.0f tuples/s (%.3f s, files written)\n", r.DaemonTuplesPerSec, r.DaemonSeconds)
	fmt.Fprintf(w, "in-process dealer:      %.0f tuples/s (%.3f s, files written)\n", r.DealerTuplesPerSec, r.DealerSeconds)
	fmt.Fprintf(w, "daemons / dealer:       %.2f\n", r.Ratio)
	fmt.Fprintf(w, "inter-site bytes:       %d (%.3f per tuple, %.0f per request)\n", r.PeerBytes, r.PeerBytesPerTuple, r.PeerBytesPerReq)
}
