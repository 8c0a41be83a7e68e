package bench

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/cmd/kord/internal/loadgen"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// TestDeliverCPU measures the CPU each process of the processes path
// spends per delivered key pair (what the daemons and the client cost,
// independent of the machine's other load), for DPF-32 and DCF-32 derived
// and otp rows. It needs a built kord: KORD_DELIVER_CPU=/path/to/kord
// (KORD_DELIVER_KEYS: key pairs per row, default 400000;
// KORD_DELIVER_SLAB_FDS=1 or 0: --module-slab-fds or
// --module-slab-fds=false, for an A/B of slabs as sealed memfds, handed on
// to the application, against bytes; unset: the parties' default;
// KORD_DELIVER_APP_LINK=tcp: the client over TLS instead of the parties'
// Unix sockets). Not run otherwise.
func TestDeliverCPU(t *testing.T) {
	bin := os.Getenv("KORD_DELIVER_CPU")
	if bin == "" {
		t.Skip("KORD_DELIVER_CPU=/path/to/kord measures the processes path's CPU per pair")
	}
	keys := 400000
	if s := os.Getenv("KORD_DELIVER_KEYS"); s != "" {
		keys, _ = strconv.Atoi(s)
	}
	ctx := context.Background()
	// KORD_DELIVER_DIR: the cluster's directory (its logs), kept.
	dir := os.Getenv("KORD_DELIVER_DIR")
	opts := cluster.Options{Bin: bin, Batch: DeliverDefaultBatch, InFlight: DeliverDefaultInFlight,
		AppUnix: os.Getenv("KORD_DELIVER_APP_LINK") != "tcp"}
	switch os.Getenv("KORD_DELIVER_SLAB_FDS") {
	case "1":
		opts.PartyArgs = [2][]string{{"--module-slab-fds"}, {"--module-slab-fds"}}
	case "0":
		opts.PartyArgs = [2][]string{{"--module-slab-fds=false"}, {"--module-slab-fds=false"}}
	}
	c, err := cluster.Start(ctx, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if dir == "" {
		defer c.Remove()
	} else {
		defer c.Close()
	}
	rng := mrand.New(mrand.NewPCG(1, 2))
	id := uint64(1)
	procs := func() (out [5]time.Duration) {
		for b := range 2 {
			out[b], _ = c.Module(b).CPU()
			out[2+b], _ = c.Party(b).CPU()
		}
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		out[4] = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		return out
	}
	var classes []loadgen.Class
	for _, k := range deliverClasses() {
		if k.Mode == msg.Derived || k.Tier == msg.Keystream {
			classes = append(classes, k)
		}
	}
	for _, k := range classes {
		// Warm up, then measure the stream alone (no verification).
		if _, _, bad, err := processesChunk(ctx, c.Apps(), k, DeliverDefaultChunk, DeliverDefaultBatch, &id, rng); err != nil || bad != 0 {
			t.Fatalf("%s warm-up: %v, %d bad", k.Name(), err, bad)
		}
		var el time.Duration
		var used [5]time.Duration
		for done := 0; done < keys; done += DeliverDefaultChunk {
			n := min(DeliverDefaultChunk, keys-done)
			var rq [2][]*pb.KeyRequest
			if k.Mode == msg.Bound {
				rq, _ = boundBulks(k, id, n, DeliverDefaultBatch, rng)
			} else {
				rq, _ = loadgen.RequestsPer(k, id, n, DeliverDefaultBatch, rng)
			}
			id += uint64(len(rq[0]))
			before := procs()
			d, _, release, err := timedStream(ctx, c.Apps(), rq)
			release() // the client's release of the batches (wipes, unmaps) is its CPU too
			after := procs()
			if err != nil {
				t.Fatal(err)
			}
			el += d
			for i := range used {
				used[i] += after[i] - before[i]
			}
		}
		per := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Nanoseconds())/1e3/float64(keys)) }
		total := used[0] + used[1] + used[2] + used[3] + used[4]
		t.Logf("%-18s %8.0f pairs/s  µs CPU/pair: module0 %s module1 %s party0 %s party1 %s client %s total %s",
			k.Name(), float64(keys)/el.Seconds(), per(used[0]), per(used[1]), per(used[2]), per(used[3]), per(used[4]), per(total))
	}
}
