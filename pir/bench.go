package pir

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
)

// BenchConfig configures Bench.
type BenchConfig struct {
	Records    int           // number of records N
	RecordSize int           // bytes per record S
	Batch      int           // queries per pass over the database
	MinTime    time.Duration // keep running batches at least this long (≥ 3 batches)
	Workers    int           // scan goroutines per server; ≤ 0 means one per CPU
	HTTP       bool          // run the two servers on 127.0.0.1 and query over HTTP/2
	Seed       uint64        // database and index randomness
}

// BenchResult is what `kord bench pir --json` prints.
type BenchResult struct {
	Records     int    `json:"records"`
	RecordSize  int    `json:"record_size"`
	Batch       int    `json:"batch"`
	Batches     int    `json:"batches"`
	Queries     int    `json:"queries"`
	Workers     int    `json:"workers"`
	Kernel      string `json:"prg_kernel"`
	Transport   string `json:"transport"`
	DBBytes     int64  `json:"db_bytes"`
	DomainBits  int    `json:"domain_bits"`
	KeyBytes    int    `json:"key_bytes"`
	AnswerBytes int    `json:"answer_bytes"`
	// QueriesPerSec is per server: queries answered divided by the time one
	// server spends answering them (the two servers are timed one after the
	// other on this machine; deployed, each has its own).
	QueriesPerSec float64 `json:"queries_per_sec"`
	// DBBytesPerSec is QueriesPerSec × DBBytes: the rate at which records
	// are folded into answers, as if each query scanned the database alone.
	DBBytesPerSec float64 `json:"db_bytes_per_sec"`
	// PhysicalScanBytesPerSec is DBBytes × passes / server time: the bytes
	// actually streamed through the cores (one pass serves a whole batch).
	PhysicalScanBytesPerSec float64 `json:"physical_scan_bytes_per_sec"`
	// MemBandwidth is a plain multi-threaded streaming read of a buffer far
	// larger than the caches, measured in this run (best of several).
	MemBandwidth      float64 `json:"mem_bandwidth_bytes_per_sec"`
	ScanOverMem       float64 `json:"db_bytes_per_sec_over_mem_bandwidth"`
	ServerSecPerBatch float64 `json:"server_seconds_per_batch"`
	// EndToEndQueriesPerSec includes key generation, both servers one after
	// the other (or HTTP round trips), and verification.
	EndToEndQueriesPerSec float64 `json:"end_to_end_queries_per_sec"`
	AnswersVerified       int     `json:"answers_verified"`
	AnswersWrong          int     `json:"answers_wrong"`
}

// Bench builds a random database, runs two servers and a client, checks
// every answer against the database, and measures throughput and the
// machine's streaming memory bandwidth in the same run.
func Bench(ctx context.Context, cfg BenchConfig) (*BenchResult, error) {
	if cfg.Batch < 1 || cfg.Batch > MaxKeysPerRequest {
		return nil, fmt.Errorf("pir: batch %d is outside 1..%d", cfg.Batch, MaxKeysPerRequest)
	}
	// Validate the shape before allocating Records·RecordSize bytes.
	if err := (Header{RecordSize: cfg.RecordSize, Count: cfg.Records}).validate(); err != nil {
		return nil, err
	}
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6b6f7264))
	data := make([]byte, cfg.Records*cfg.RecordSize)
	fillRandom(rng, data)
	db, err := NewDB(cfg.RecordSize, data)
	if err != nil {
		return nil, err
	}
	res := &BenchResult{Records: cfg.Records, RecordSize: cfg.RecordSize, Batch: cfg.Batch,
		Workers: workers, Kernel: prg.Active(), Transport: "in-process", DBBytes: db.Size(),
		DomainBits: db.DomainBits(), KeyBytes: fss.XorKeySize(db.DomainBits()), AnswerBytes: cfg.RecordSize}
	mem := MemBandwidth(workers)
	e := NewEngine(db, workers)

	var client *Client
	if cfg.HTTP {
		res.Transport = "http2-loopback"
		var stop func()
		client, stop, err = loopbackPair(ctx, db, workers)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	var serverTime, total time.Duration
	start := time.Now()
	for b := 0; b < 3 || time.Since(start) < cfg.MinTime; b++ {
		idx := make([]int, cfg.Batch)
		for i := range idx {
			idx[i] = rng.IntN(cfg.Records)
		}
		var recs [][]byte
		if client != nil {
			t0 := time.Now()
			recs, err = client.QueryBatch(ctx, idx)
			if err != nil {
				return nil, err
			}
			// Both servers ran concurrently, sharing this machine's cores:
			// charge the wall time to each of them.
			serverTime += 2 * time.Since(t0)
		} else {
			recs, err = answerLocal(e, idx, &serverTime)
			if err != nil {
				return nil, err
			}
		}
		for i, r := range recs {
			if bytes.Equal(r, db.Record(idx[i])) {
				res.AnswersVerified++
			} else {
				res.AnswersWrong++
			}
		}
		res.Batches++
		res.Queries += cfg.Batch
	}
	total = time.Since(start)
	mem = max(mem, MemBandwidth(workers))
	perServer := serverTime.Seconds() / 2
	res.QueriesPerSec = float64(res.Queries) / perServer
	res.DBBytesPerSec = res.QueriesPerSec * float64(db.Size())
	res.PhysicalScanBytesPerSec = float64(res.Batches) * float64(db.Size()) / perServer
	res.MemBandwidth = mem
	res.ScanOverMem = res.DBBytesPerSec / mem
	res.ServerSecPerBatch = perServer / float64(res.Batches)
	res.EndToEndQueriesPerSec = float64(res.Queries) / total.Seconds()
	return res, nil
}

// answerLocal is the in-process client: generate the key pairs, let each
// server answer its keys (timed), combine.
func answerLocal(e *Engine, idx []int, serverTime *time.Duration) ([][]byte, error) {
	l := e.db.DomainBits()
	k0s := make([]*fss.XorKey, len(idx))
	k1s := make([]*fss.XorKey, len(idx))
	for i, x := range idx {
		k0, k1, err := fss.GenXor(nil, l, uint64(x), 1)
		if err != nil {
			return nil, err
		}
		// The servers receive serialized keys; round-trip them as they would.
		if k0s[i], err = roundTrip(k0); err != nil {
			return nil, err
		}
		if k1s[i], err = roundTrip(k1); err != nil {
			return nil, err
		}
	}
	t0 := time.Now()
	a0, err := e.Answer(k0s)
	if err != nil {
		return nil, err
	}
	a1, err := e.Answer(k1s)
	if err != nil {
		return nil, err
	}
	*serverTime += time.Since(t0)
	for i := range a0 {
		xorInto(a0[i], a1[i])
	}
	return a0, nil
}

// roundTrip serializes and parses a key, as the wire does; a failure is an
// error, never a silent fallback to the unserialized key.
func roundTrip(k *fss.XorKey) (*fss.XorKey, error) {
	b, err := k.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return fss.ParseXorKey(b)
}

func xorInto(dst, src []byte) {
	for i := range dst {
		dst[i] ^= src[i]
	}
}

func fillRandom(rng *rand.Rand, b []byte) {
	var w [8]byte
	for i := 0; i < len(b); i += 8 {
		v := rng.Uint64()
		for j := range w {
			w[j] = byte(v >> (8 * j))
		}
		copy(b[i:], w[:])
	}
}

// MemBandwidth measures streaming read bandwidth in bytes/s: workers
// goroutines each sum their share of a 512 MiB buffer of 64-bit words with
// independent accumulators; the best of three passes counts.
func MemBandwidth(workers int) float64 {
	const size = 512 << 20
	buf := make([]uint64, size/8)
	for i := range buf {
		buf[i] = uint64(i)
	}
	best := 0.0
	var sink uint64
	for pass := 0; pass < 3; pass++ {
		var wg sync.WaitGroup
		sums := make([]uint64, workers)
		per := len(buf) / workers
		t0 := time.Now()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sums[w] = sumWords(buf[w*per : (w+1)*per])
			}()
		}
		wg.Wait()
		dt := time.Since(t0).Seconds()
		for _, s := range sums {
			sink += s
		}
		best = max(best, float64(per*workers*8)/dt)
	}
	memSink = sink
	return best
}

var memSink uint64

func sumWords(b []uint64) uint64 {
	var s0, s1, s2, s3, s4, s5, s6, s7 uint64
	for len(b) >= 8 {
		s0 += b[0]
		s1 += b[1]
		s2 += b[2]
		s3 += b[3]
		s4 += b[4]
		s5 += b[5]
		s6 += b[6]
		s7 += b[7]
		b = b[8:]
	}
	for _, v := range b {
		s0 += v
	}
	return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7
}
