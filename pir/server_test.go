package pir

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kord-fss/kord/fss"
)

func startServer(t *testing.T, db *DB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		_ = NewServer(db, 2, 0, nil).Serve(ctx, ln)
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

func TestServersAndClient(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	db := randomDB(t, rng, 3000, 32)
	a, b := startServer(t, db), startServer(t, db)
	c := NewClient(a, b, nil)
	ctx := context.Background()
	for _, i := range []int{0, 1, 2999, 1234} {
		rec, err := c.Query(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(rec, db.Record(i)) {
			t.Fatalf("record %d wrong", i)
		}
	}
	idx := []int{5, 5, 77, 2998}
	recs, err := c.QueryBatch(ctx, idx)
	if err != nil {
		t.Fatal(err)
	}
	for j, i := range idx {
		if !bytes.Equal(recs[j], db.Record(i)) {
			t.Fatalf("batch record %d wrong", i)
		}
	}
	// Concurrent clients are batched into shared passes and still correct.
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			i := (g * 373) % db.Count
			r, err := NewClient(a, b, nil).Query(ctx, i)
			if err == nil && !bytes.Equal(r, db.Record(i)) {
				err = errors.New("wrong record under concurrency")
			}
			errs <- err
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Query(ctx, 3000); !errors.Is(err, ErrIndexRange) {
		t.Fatalf("index out of range: got %v", err)
	}
	if _, err := c.Query(ctx, -1); !errors.Is(err, ErrIndexRange) {
		t.Fatalf("negative index: got %v", err)
	}
}

func TestClientErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	db := randomDB(t, rng, 500, 16)
	other := randomDB(t, rng, 500, 16)
	wide := randomDB(t, rng, 500, 24)
	a, b := startServer(t, db), startServer(t, db)
	ctx := context.Background()

	// The database changed since the client learnt its hash.
	c := NewClient(a, b, nil)
	info := Info{RecordSize: 16, Count: 500, Hash: other.HashHex()}
	if err := c.Expect(info); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Query(ctx, 3); !errors.Is(err, ErrDBChanged) {
		t.Fatalf("changed database: got %v", err)
	}
	// Record size mismatch.
	c = NewClient(a, b, nil)
	_ = c.Expect(Info{RecordSize: 24, Count: 500, Hash: db.HashHex()})
	if _, err := c.Query(ctx, 3); !errors.Is(err, ErrRecordSizeMismatch) {
		t.Fatalf("record size: got %v", err)
	}
	// The two servers hold different databases.
	if _, err := NewClient(a, startServer(t, wide), nil).Query(ctx, 1); !errors.Is(err, ErrServersDisagree) {
		t.Fatalf("disagreeing servers: got %v", err)
	}
	// A key of the wrong width, sent by hand.
	k0, _, _ := fss.GenXor(nil, db.DomainBits()+2, 1, 1)
	req := &Request{Hash: db.Hash, RecordSize: 16, Count: 500, Keys: []*fss.XorKey{k0}}
	if _, err := NewClient(a, b, nil).post(ctx, 0, req); !errors.Is(err, ErrKeyWidth) {
		t.Fatalf("wrong key width: got %v", err)
	}
	// Garbage.
	resp, err := http.Post("http://"+a+"/v1/answer", "application/x-kord-pir", bytes.NewReader([]byte("nonsense")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("garbage: status %d", resp.StatusCode)
	}
}

func TestDBFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	db := randomDB(t, rng, 1000, 48)
	path := filepath.Join(t.TempDir(), "db.kpir")
	if err := db.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	got, err := Open(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if got.Header != db.Header || !bytes.Equal(got.Records(), db.Records()) {
		t.Fatal("database did not round-trip")
	}
	if hex.EncodeToString(got.Hash[:]) != db.HashHex() {
		t.Fatal("hash")
	}
}

func TestDBFileErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	db := randomDB(t, rng, 100, 16)
	dir := t.TempDir()
	write := func(name string, mut func([]byte) []byte) string {
		var buf bytes.Buffer
		_, _ = db.WriteTo(&buf)
		p := filepath.Join(dir, name)
		if err := writeFile(p, mut(buf.Bytes())); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name string
		mut  func([]byte) []byte
		err  error
	}{
		{"magic", func(b []byte) []byte { b[0] = 'X'; return b }, ErrHeader},
		{"reserved", func(b []byte) []byte { b[60] = 1; return b }, ErrHeader},
		{"size", func(b []byte) []byte { b[8] = 8; return b }, ErrRecordSize},
		{"count", func(b []byte) []byte { clear(b[16:24]); return b }, ErrCount},
		{"short", func(b []byte) []byte { return b[:len(b)-1] }, ErrFileLength},
		{"long", func(b []byte) []byte { return append(b, 0) }, ErrFileLength},
		{"content", func(b []byte) []byte { b[100] ^= 1; return b }, ErrHash},
		{"hash", func(b []byte) []byte { b[30] ^= 1; return b }, ErrHash},
	}
	for _, c := range cases {
		if _, err := Open(write(c.name, c.mut), true); !errors.Is(err, c.err) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.err)
		}
	}
}

func TestWireRoundTrip(t *testing.T) {
	k0, _, _ := fss.GenXor(nil, 12, 5, 1)
	k1, _, _ := fss.GenXor(nil, 12, 9, 1)
	req := &Request{RecordSize: 64, Count: 4000, Keys: []*fss.XorKey{k0, k1}}
	req.Hash[3] = 7
	b, err := req.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash != req.Hash || got.RecordSize != 64 || got.Count != 4000 || !got.Keys[1].Equal(k1) {
		t.Fatal("request did not round-trip")
	}
	for cut := 0; cut < len(b); cut += 7 {
		if _, err := ParseRequest(b[:cut]); err == nil {
			t.Fatalf("truncated request (%d bytes) accepted", cut)
		}
	}
	resp := &Response{RecordSize: 16, Answers: [][]byte{make([]byte, 16), bytes.Repeat([]byte{1}, 16)}}
	rb, _ := resp.MarshalBinary()
	gr, err := ParseResponse(rb)
	if err != nil || len(gr.Answers) != 2 || gr.Answers[1][0] != 1 {
		t.Fatalf("response did not round-trip: %v", err)
	}
	if _, err := ParseResponse(rb[:len(rb)-1]); err == nil {
		t.Fatal("truncated response accepted")
	}
}

func FuzzParseHeader(f *testing.F) {
	db, _ := NewDB(16, make([]byte, 160))
	hb, _ := db.Header.MarshalBinary()
	f.Add(hb)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b)
		if err != nil {
			return
		}
		out, err := h.MarshalBinary()
		if err != nil || !bytes.Equal(out, b[:HeaderSize]) {
			t.Fatal("accepted header does not re-encode to the same bytes")
		}
	})
}

func FuzzParseRequest(f *testing.F) {
	k0, _, _ := fss.GenXor(nil, 10, 5, 1)
	b, _ := (&Request{RecordSize: 16, Count: 1000, Keys: []*fss.XorKey{k0, k0}}).MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRequest(b)
		if err != nil {
			return
		}
		out, err := r.MarshalBinary()
		if err != nil || !bytes.Equal(out, b) {
			t.Fatal("accepted request does not re-encode to the same bytes")
		}
	})
}

func FuzzParseResponse(f *testing.F) {
	b, _ := (&Response{RecordSize: 16, Answers: [][]byte{make([]byte, 16)}}).MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseResponse(b)
		if err != nil {
			return
		}
		out, err := r.MarshalBinary()
		if err != nil || !bytes.Equal(out, b) {
			t.Fatal("accepted response does not re-encode to the same bytes")
		}
	})
}

func writeFile(p string, b []byte) error { return os.WriteFile(p, b, 0o644) }

// TestStoppedBatcherAnswers: once the batcher has stopped, a request gets
// ErrStopping at once instead of waiting in the queue until the client
// gives up.
func TestStoppedBatcherAnswers(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	db := randomDB(t, rng, 100, 16)
	s := NewServer(db, 1, 0, nil)
	ctx, cancel := context.WithCancel(context.Background())
	s.Start(ctx)
	cancel()
	<-s.stopped
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	hs := &http.Server{Handler: s.Handler(), Protocols: &p}
	go hs.Serve(ln)
	defer hs.Close()
	a := ln.Addr().String()
	qctx, qcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer qcancel()
	if _, err := NewClient(a, a, nil).Query(qctx, 3); !errors.Is(err, ErrStopping) {
		t.Fatalf("query to a stopped server: got %v, want ErrStopping", err)
	}
}
