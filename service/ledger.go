package service

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The ledger is a party's own durable record of what it served for each
// recent request id (issue 33): the counters, the shape, a digest of its
// own side of the request (its shares, or a derived request's fields)
// and a digest of its own outputs' pair tags, or the class it answered
// the id with. It holds no key material.
//
// After a restart of this party (the ledger's epoch, counted in the
// file, says so — a first start is not a restart) it is the only source
// of what the party may hand out again: the peer's lists can only narrow
// it (spent, void, not delivered there), never add to it (recover.go).
//
// Writes go to the file with no fsync of their own (bbolt NoSync): a
// killed party process loses nothing written (the page cache keeps it);
// the file is synced once a second while it changes and at Close, as the
// module commits its counter reservations, never once per delivery. A
// whole machine lost before a sync loses the tail: those ids are then
// unknown here, and the peer's lists make them void (recover.go).

// ledgerVersion is the state file's format; another is refused. 2:
// entries are keyed by application identity and id (an entry of format
// 1 names no application, so it cannot be told which request it is of).
const ledgerVersion = 2

// ledgerCap bounds the ids remembered (the module's re-collect window).
const ledgerCap = recentKeys

var (
	ledgerMeta    = []byte("kord/v1/party/meta")
	ledgerRecs    = []byte("kord/v1/party/served")
	keyLVersion   = []byte("version")
	keyLEpoch     = []byte("epoch")
	errLedgerData = errors.New("service: malformed ledger entry")
	// errLedgerClosed: the party's state file was closed (it is going down).
	errLedgerClosed = errors.New("service: the party state file is closed")
)

// served is one id's entry: what this site served for it, or how it
// answered it.
type served struct {
	seq uint64 // insertion order (eviction)
	shape
	req       [32]byte // reqDigest of this site's side of the request
	first     uint64
	n         int
	slabFirst uint64
	slabN     int
	tags      [32]byte // recoverDigest of this site's outputs
	// conf: the confirmation of this site's pair tags (itemConfirm,
	// confirm.go), which party 0 sends for a held pair it delivered.
	conf  [32]byte
	class string // "": outputs served; else the class answered
}

type idSeq struct {
	id  rid
	seq uint64
}

// ledger keeps the entries in memory and, with a file, on disk.
type ledger struct {
	mu        sync.Mutex
	db        *bolt.DB        // nil: memory only (never a restart)
	byID      map[rid]*served // by application identity and id
	order     []idSeq         // ids in insertion order (eviction), stale ones skipped
	seq       uint64
	epoch     uint64
	restarted bool // opened over a file an earlier process wrote
	// closed: the file was closed (the party is going down); entries
	// are refused from then on (put), so that nothing is answered that
	// the next process's record would not hold.
	closed bool
	used   bool // the restart's recovery has been taken
	dirty  bool
	stop   chan struct{}
	done   chan struct{}
	log    *slog.Logger
}

// openLedger opens the party's state file at path (created mode 0600),
// or a memory-only ledger for path "".
func openLedger(path string, log *slog.Logger) (*ledger, error) {
	l := &ledger{byID: map[rid]*served{}, log: log, epoch: 1}
	if path == "" {
		return l, nil
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second, NoSync: true})
	if err != nil {
		return nil, fmt.Errorf("service: opening the party state file %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		m := tx.Bucket(ledgerMeta)
		if m != nil {
			v := m.Get(keyLVersion)
			if len(v) != 8 || binary.LittleEndian.Uint64(v) != ledgerVersion {
				got := "unreadable"
				if len(v) == 8 {
					got = fmt.Sprint(binary.LittleEndian.Uint64(v))
				}
				why := ""
				if got == "1" {
					why = " (format 1 keys requests by id alone, not by application and id, so its entries cannot be carried over)"
				}
				return fmt.Errorf("service: the party state file %s has format version %s, this kord reads %d%s: run the kord version that wrote it, or (its pairs settled: no application waiting to resend) move the file away to start afresh", path, got, ledgerVersion, why)
			}
			if e := m.Get(keyLEpoch); len(e) == 8 {
				l.epoch = binary.LittleEndian.Uint64(e) + 1
				l.restarted = true
			}
		}
		if m, err = tx.CreateBucketIfNotExists(ledgerMeta); err != nil {
			return err
		}
		if err := m.Put(keyLVersion, binary.LittleEndian.AppendUint64(nil, ledgerVersion)); err != nil {
			return err
		}
		if err := m.Put(keyLEpoch, binary.LittleEndian.AppendUint64(nil, l.epoch)); err != nil {
			return err
		}
		b, err := tx.CreateBucketIfNotExists(ledgerRecs)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			s, err := decodeServed(v)
			if err != nil || string(k) != string(ledgerKey(s.key())) {
				l.log.Warn("party state file: skipping a malformed entry", "err", err)
				return nil
			}
			l.byID[s.key()] = s
			l.seq = max(l.seq, s.seq)
			return nil
		})
	})
	for _, s := range l.byID {
		l.order = append(l.order, idSeq{s.key(), s.seq})
	}
	slices.SortFunc(l.order, func(a, b idSeq) int { return cmp.Compare(a.seq, b.seq) })
	if err == nil {
		err = db.Sync() // the epoch is on disk before anything is served
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	l.db, l.stop, l.done = db, make(chan struct{}), make(chan struct{})
	go l.syncer()
	return l, nil
}

// syncer syncs the file once a second while it changes.
func (l *ledger) syncer() {
	defer close(l.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.mu.Lock()
			d := l.dirty
			l.dirty = false
			l.mu.Unlock()
			if d {
				if err := l.db.Sync(); err != nil {
					l.log.Warn("party state file: sync", "err", err)
				}
			}
		}
	}
}

// close syncs and closes the file.
func (l *ledger) close() error {
	if l == nil || l.db == nil {
		return nil
	}
	l.mu.Lock()
	db := l.db
	l.db, l.closed = nil, true
	l.mu.Unlock()
	close(l.stop)
	<-l.done
	err := db.Sync()
	return errors.Join(err, db.Close())
}

// durable reports whether the ledger keeps a file (entries are worth
// computing).
func (l *ledger) durable() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.db != nil || l.closed
}

// takeRestart reports, once, whether this party restarted over its own
// file: only its first session after the restart uses recovery.
func (l *ledger) takeRestart() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.restarted && !l.used
	l.used = true
	return r
}

// entries returns a copy of every entry.
func (l *ledger) entries() map[rid]served {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[rid]served, len(l.byID))
	for id, s := range l.byID {
		out[id] = *s
	}
	return out
}

// get returns the entry of id (an application's request id).
func (l *ledger) get(id rid) (served, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.byID[id]
	if !ok {
		return served{}, false
	}
	return *s, true
}

// put records entries (one write, no fsync), evicting the oldest past
// ledgerCap. It reports false when the file is closed (the party is going
// down): then nothing is recorded, and the caller must not answer, deliver
// or reply for those entries, since the next process's record would not
// hold them (recover.go: each site's own record decides).
func (l *ledger) put(ss []*served) bool {
	if len(ss) == 0 || l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	if l.db == nil {
		return true // no state file: nothing outlives the process
	}
	for _, s := range ss {
		l.seq++
		s.seq = l.seq
		l.byID[s.key()] = s
		l.order = append(l.order, idSeq{s.key(), s.seq})
	}
	var evict []rid
	drop := 0
	for len(l.byID) > ledgerCap && drop < len(l.order) {
		o := l.order[drop]
		drop++
		if s, ok := l.byID[o.id]; ok && s.seq == o.seq {
			delete(l.byID, o.id)
			evict = append(evict, o.id)
		}
	}
	if drop > len(l.order)/2 || len(l.order) > 4*ledgerCap {
		// Compact: keep only the live positions.
		keep := l.order[:0]
		for _, o := range l.order[drop:] {
			if s, ok := l.byID[o.id]; ok && s.seq == o.seq {
				keep = append(keep, o)
			}
		}
		clear(l.order[len(keep):])
		l.order = keep
	} else {
		l.order = l.order[drop:]
	}
	err := l.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(ledgerRecs)
		for _, s := range ss {
			if l.byID[s.key()] != s {
				continue // evicted at once
			}
			if err := b.Put(ledgerKey(s.key()), s.encode()); err != nil {
				return err
			}
		}
		for _, id := range evict {
			if err := b.Delete(ledgerKey(id)); err != nil {
				return err
			}
		}
		return nil
	})
	l.dirty = true
	if err != nil {
		// The entries stay in memory; after a restart their ids are
		// unknown here and the peer's lists make them void.
		l.log.Warn("party state file: writing served requests", "err", err)
	}
	return true
}

// answered records that the requests ids were answered class (spent,
// void, tampered): after a restart a resend of one gets that class, never
// outputs; the same id of another application is another request.
// It reports false when the file is closed (put): record before
// answering, and answer only on true.
func (l *ledger) answered(ids []rid, class string) bool {
	ss := make([]*served, len(ids))
	for i, id := range ids {
		ss[i] = &served{shape: shape{app: id.app, id: id.id}, class: class}
	}
	return l.put(ss)
}

// ledgerKey is an entry's key in the file: the id (8 bytes, big endian)
// and the application identity's bytes.
func ledgerKey(id rid) []byte {
	return append(binary.BigEndian.AppendUint64(nil, id.id), id.app...)
}

// encode writes s: version ‖ seq ‖ app ‖ shape ‖ req ‖ first ‖ n ‖ slabFirst ‖
// slabN ‖ tags ‖ conf ‖ class, integers as uvarints, strings length-prefixed.
func (s *served) encode() []byte {
	b := []byte{ledgerVersion}
	u := func(v uint64) { b = binary.AppendUvarint(b, v) }
	str := func(v string) { u(uint64(len(v))); b = append(b, v...) }
	u(s.seq)
	str(s.app)
	u(s.id)
	u(s.beta)
	u(uint64(s.mode))
	u(uint64(s.typ))
	u(uint64(s.in))
	u(uint64(s.out))
	u(uint64(s.count))
	if s.deriveBeta {
		u(1)
	} else {
		u(0)
	}
	str(s.vec)
	b = append(b, s.req[:]...)
	u(s.first)
	u(uint64(s.n))
	u(s.slabFirst)
	u(uint64(s.slabN))
	b = append(b, s.tags[:]...)
	b = append(b, s.conf[:]...)
	str(s.class)
	return b
}

// decodeServed reads encode's bytes; anything else is an error.
func decodeServed(b []byte) (*served, error) {
	if len(b) == 0 || b[0] != ledgerVersion {
		return nil, fmt.Errorf("%w: format version", errLedgerData)
	}
	b = b[1:]
	bad := false
	u := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			bad = true
			return 0
		}
		b = b[n:]
		return v
	}
	u32 := func() uint32 {
		v := u()
		if v > 1<<32-1 {
			bad = true
		}
		return uint32(v)
	}
	fixed := func(dst []byte) {
		if len(b) < len(dst) {
			bad = true
			return
		}
		copy(dst, b)
		b = b[len(dst):]
	}
	str := func() string {
		n := u()
		if n > uint64(len(b)) || n > 1<<20 {
			bad = true
			return ""
		}
		v := string(b[:n])
		b = b[n:]
		return v
	}
	s := &served{}
	s.seq = u()
	s.app = str()
	s.id, s.beta = u(), u()
	s.mode, s.typ, s.in, s.out, s.count = u32(), u32(), u32(), u32(), u32()
	db := u()
	s.deriveBeta = db == 1
	s.vec = str()
	fixed(s.req[:])
	s.first = u()
	n := u()
	s.slabFirst = u()
	sn := u()
	fixed(s.tags[:])
	fixed(s.conf[:])
	s.class = str()
	if bad || db > 1 || len(b) != 0 || n > MaxCount || sn > 1<<20 {
		return nil, errLedgerData
	}
	s.n, s.slabN = int(n), int(sn)
	if s.vec != "" && s.vec[0] != 'G' {
		return nil, fmt.Errorf("%w: payload vector", errLedgerData)
	}
	return s, nil
}
