package service

import (
	"crypto/sha256"
	"runtime"
	"testing"

	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
)

// A correlation's collect makes one record, however many counters
// (blocks) it took: the records of a batch with a ResNet-18 layer's
// correlation (many thousands of blocks) once took tens of MB per request, which
// made the party daemons' peak RSS follow the largest correlation's
// blocks (0.85–1.1 GB in `kord bench resnet18-keys`).
func TestCollectedCorrOneRecord(t *testing.T) {
	const blocks = 1 << 18
	c := msg.Correlation{Kind: msg.CorrMatVec, Ring: 32, In: 4, Out: 4}
	j := &job{corr: &c, blocks: blocks}
	segs := []segment{{j0: 0, j1: 1, n: blocks, corr: true}}
	sh := &msg.CorrShares{Counter: 100, Blocks: blocks, Corr: c, A: make([]uint64, 16)}
	res := []socket.Result{{Collect: &msg.CollectResponse{Counter: 100, Corr: sh}}}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, err := collected(res, []*job{j}, segs, 100, sha256.New())
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || len(out[0]) != 1 || out[0][0].Corr != sh || out[0][0].Counter != 100 {
		t.Fatalf("outputs %+v, want the one correlation at counter 100", out)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("collecting one correlation of %d blocks allocated %d bytes", blocks, got)
	}
}
