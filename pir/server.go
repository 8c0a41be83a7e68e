package pir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/kord-fss/kord/fss"
)

// Info describes a server's database; GET /v1/info returns it as JSON.
type Info struct {
	RecordSize int    `json:"record_size"`
	Count      int    `json:"count"`
	Hash       string `json:"hash"` // hex SHA-256 content hash
	DomainBits int    `json:"domain_bits"`
	KeyBytes   int    `json:"key_bytes"`
}

// Error codes a server returns in its JSON error body.
const (
	codeBadRequest = "bad-request"
	codeDBChanged  = "db-changed"
	codeRecordSize = "record-size"
	codeCount      = "count"
	codeKeyWidth   = "key-width"
	codeTooMany    = "too-many-keys"
	codeInternal   = "internal"
	codeStopping   = "stopping"
)

// Server answers PIR requests over HTTP (HTTP/1.1 and unencrypted HTTP/2).
// Concurrent requests are batched: while one pass over the database runs,
// new requests queue, and the next pass serves all of them at once (up to
// MaxBatch keys).
type Server struct {
	db       *DB
	eng      *Engine
	maxBatch int
	jobs     chan *job
	log      *slog.Logger
	stopped  chan struct{} // closed when the batcher has stopped
	stopOnce sync.Once
}

type job struct {
	keys []*fss.XorKey
	done chan jobResult
}

type jobResult struct {
	answers [][]byte
	err     error
}

// NewServer returns a server over db; workers ≤ 0 means one per CPU, and
// maxBatch ≤ 0 means 256 keys per pass.
func NewServer(db *DB, workers, maxBatch int, log *slog.Logger) *Server {
	if maxBatch <= 0 {
		maxBatch = 256
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{db: db, eng: NewEngine(db, workers), maxBatch: maxBatch, jobs: make(chan *job, 1024), log: log, stopped: make(chan struct{})}
}

// Info returns the server's database description.
func (s *Server) Info() Info {
	return Info{RecordSize: s.db.RecordSize, Count: s.db.Count, Hash: s.db.HashHex(),
		DomainBits: s.db.DomainBits(), KeyBytes: fss.XorKeySize(s.db.DomainBits())}
}

// run is the batcher: it takes every queued job (up to maxBatch keys) and
// answers them in one pass.
func (s *Server) run(ctx context.Context) {
	defer s.stopOnce.Do(func() { close(s.stopped) })
	for {
		var batch []*job
		select {
		case <-ctx.Done():
			return
		case j := <-s.jobs:
			batch = append(batch, j)
		}
		n := len(batch[0].keys)
	drain:
		for n < s.maxBatch {
			select {
			case j := <-s.jobs:
				batch = append(batch, j)
				n += len(j.keys)
			default:
				break drain
			}
		}
		keys := make([]*fss.XorKey, 0, n)
		for _, j := range batch {
			keys = append(keys, j.keys...)
		}
		t0 := time.Now()
		answers, err := s.eng.Answer(keys)
		s.log.Debug("pir pass", "requests", len(batch), "keys", len(keys), "took", time.Since(t0))
		off := 0
		for _, j := range batch {
			if err != nil {
				j.done <- jobResult{err: err}
				continue
			}
			j.done <- jobResult{answers: answers[off : off+len(j.keys)]}
			off += len(j.keys)
		}
		for _, k := range keys {
			k.Wipe()
		}
	}
}

// Handler returns the HTTP handler: GET /v1/info and POST /v1/answer. The
// batcher must be running (Serve starts it; so does Start).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/info", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.Info())
	})
	mux.HandleFunc("POST /v1/answer", s.answer)
	return mux
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	limit := int64(reqHeader + MaxKeysPerRequest*fss.XorKeySize(64) + 1)
	body, err := io.ReadAll(io.LimitReader(r.Body, limit))
	if err != nil {
		httpError(w, http.StatusBadRequest, codeBadRequest, err)
		return
	}
	req, err := ParseRequest(body)
	if err != nil {
		code := codeBadRequest
		if errors.Is(err, ErrTooManyKeys) {
			code = codeTooMany
		}
		httpError(w, http.StatusBadRequest, code, err)
		return
	}
	db := s.db
	switch {
	case req.Hash != db.Hash:
		httpError(w, http.StatusConflict, codeDBChanged,
			fmt.Errorf("%w: client expects %x…, server holds %x…", ErrDBChanged, req.Hash[:8], db.Hash[:8]))
		return
	case req.RecordSize != db.RecordSize:
		httpError(w, http.StatusConflict, codeRecordSize,
			fmt.Errorf("%w: client expects %d-byte records, server holds %d-byte records", ErrRecordSizeMismatch, req.RecordSize, db.RecordSize))
		return
	case req.Count != db.Count:
		httpError(w, http.StatusConflict, codeCount,
			fmt.Errorf("%w: client expects %d records, server holds %d", ErrCountMismatch, req.Count, db.Count))
		return
	case req.Keys[0].InBits() != db.DomainBits():
		httpError(w, http.StatusBadRequest, codeKeyWidth,
			fmt.Errorf("%w: keys have ℓ = %d, %d records need ℓ = %d", ErrKeyWidth, req.Keys[0].InBits(), db.Count, db.DomainBits()))
		return
	}
	j := &job{keys: req.Keys, done: make(chan jobResult, 1)}
	stopping := func() {
		httpError(w, http.StatusServiceUnavailable, codeStopping, ErrStopping)
	}
	select {
	case s.jobs <- j:
	case <-s.stopped:
		stopping()
		return
	case <-r.Context().Done():
		return
	}
	var res jobResult
	select {
	case res = <-j.done:
	case <-s.stopped:
		// The batcher answers every job it takes before it stops, so a
		// job still unanswered now sits in the queue for good.
		select {
		case res = <-j.done:
		default:
			stopping()
			return
		}
	case <-r.Context().Done():
		return
	}
	if res.err != nil {
		httpError(w, http.StatusInternalServerError, codeInternal, res.err)
		return
	}
	out, err := (&Response{Hash: db.Hash, RecordSize: db.RecordSize, Answers: res.answers}).MarshalBinary()
	if err != nil {
		httpError(w, http.StatusInternalServerError, codeInternal, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-kord-pir")
	_, _ = w.Write(out)
}

type errorBody struct {
	Code  string `json:"code"`
	Error string `json:"error"`
}

func httpError(w http.ResponseWriter, status int, code string, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Code: code, Error: err.Error()})
}

// Start starts the batcher; it stops when ctx ends. Use it with Handler
// when serving through your own http.Server.
func (s *Server) Start(ctx context.Context) { go s.run(ctx) }

// Serve serves HTTP/1.1 and unencrypted HTTP/2 (h2c) on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.Start(ctx)
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	hs := &http.Server{Handler: s.Handler(), Protocols: &p, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		_ = hs.Shutdown(sctx)
	}()
	err := hs.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
