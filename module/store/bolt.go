package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// DefaultWindow is how many counters a Bolt store reserves per commit.
const DefaultWindow = 1 << 16

var (
	bucket      = []byte("kord/v1/module")
	keyCounters = []byte("counters")
	keyPairing  = []byte("pairing")
)

// ErrPermissions is returned when a state file is readable or writable by
// anyone but its owner, is owned by another user, or lies in a directory
// that others may write (checkPath, checkFile).
var ErrPermissions = errors.New("store: unsafe state file")

// ErrInUse is returned by OpenBoltWith when another process holds the
// state file.
var ErrInUse = errors.New("store: state file in use")

// LockWait is how long OpenBoltWith waits for another process to release
// the state file's lock before it returns ErrInUse.
const LockWait = 500 * time.Millisecond

// Bolt keeps a module's pairing secret and counters in a bbolt file (mode
// 0600). Counters are committed by reservation: a Save that moves Next or
// PeerFloor past the reserved high-water marks commits (with fsync) new
// marks Window counters ahead; Saves inside the reservation touch only
// memory. A restarted module resumes at the reserved marks, so a counter is
// never reused and never rolled back — it may skip up to Window counters,
// which the rollback witness then skips on the peer too. Generated and
// Accepted are not reserved: a restarted module resumes at their values of
// the last commit (for Accepted, a lower bound of what it accepted, which
// is what the rollback witness needs).
//
// The counters record is next ‖ peer floor ‖ generated ‖ accepted, 8 bytes
// LE each (32). A 24-byte record (before Accepted) reads as Accepted 0;
// the next commit writes 32 bytes, which older versions refuse to open.
//
// Once a Save leaves less than half a window of headroom, the next
// reservation is committed in the background, so that a steady stream of
// Saves rarely waits for an fsync; a Save past the reserved marks still
// waits until they are on disk.
type Bolt struct {
	db     *bolt.DB
	window uint64

	mu      sync.Mutex
	idle    *sync.Cond // signalled when a background commit ends
	pending bool       // a background commit is running
	cur     Counters   // last saved
	res     Counters   // reserved (on disk)

	sealKey []byte // nil: the pairing is stored in the clear (seal.go)
}

// OpenBolt opens or creates the state file at path, unsealed (OpenBoltWith).
// window 0 means DefaultWindow; window 1 commits every Save.
func OpenBolt(path string, window uint64) (*Bolt, error) {
	return OpenBoltWith(path, BoltOptions{Window: window})
}

// OpenBoltWith opens or creates the state file at path. It refuses a file
// that group or others can read or write or that another user owns, and a
// directory that group or others can write or that a user other than
// this one or root owns. With a SealKey the pairing secret is sealed
// (seal.go).
func OpenBoltWith(path string, o BoltOptions) (*Bolt, error) {
	window := o.Window
	if window == 0 {
		window = DefaultWindow
	}
	if err := checkPath(path); err != nil {
		return nil, err
	}
	sealKey, err := sealKeyCopy(o.SealKey)
	if err != nil {
		return nil, err
	}
	// The check above gives a clear error before anything is opened; the
	// one that counts is on the descriptor bbolt will use (the path may be
	// replaced between the two): a regular file, not a symlink, 0600 or
	// narrower.
	open := func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag|noFollow, perm)
		if err != nil {
			return nil, err
		}
		st, err := f.Stat()
		if err == nil {
			err = checkFile(name, st)
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
	// The file lock is held for the life of the process that holds it:
	// waiting on it only delays the answer, so the wait is short.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: LockWait, OpenFile: open})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s is locked by another process (a kord module, or kord party --module in-process, still running on it): stop that process first, or give this one its own --state", ErrInUse, path)
	}
	if err != nil {
		return nil, fmt.Errorf("store: opening %s: %w", path, err)
	}
	b := &Bolt{db: db, window: window, sealKey: sealKey}
	b.idle = sync.NewCond(&b.mu)
	err = db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		if err := b.checkSeal(path, bk); err != nil {
			return err
		}
		if v := bk.Get(keyCounters); v != nil {
			c, err := decCounters(v)
			if err != nil {
				return err
			}
			b.res = c
		}
		return nil
	})
	if errors.Is(err, ErrSeal) {
		db.Close()
		clear(sealKey)
		return nil, err
	}
	if err != nil {
		db.Close()
		clear(sealKey)
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	b.cur = b.res
	return b, nil
}

// Close waits for a background commit and closes the file.
func (b *Bolt) Close() error {
	b.mu.Lock()
	b.waitIdle()
	clear(b.sealKey)
	b.mu.Unlock()
	return b.db.Close()
}

// waitIdle waits (b.mu held) until no background commit runs.
func (b *Bolt) waitIdle() {
	for b.pending {
		b.idle.Wait()
	}
}

// Load returns the counters a module resumes at: the reserved marks.
func (b *Bolt) Load() (Counters, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.res, nil
}

// Save records c. It never lowers a counter: a Save below the last one is
// an error. It commits new reservations before returning when c leaves
// the reserved range.
func (b *Bolt) Save(c Counters) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.Next < b.cur.Next || c.PeerFloor < b.cur.PeerFloor || c.Accepted < b.cur.Accepted {
		return fmt.Errorf("store: refusing to roll counters back (next %d→%d, peer floor %d→%d, accepted %d→%d)",
			b.cur.Next, c.Next, b.cur.PeerFloor, c.PeerFloor, b.cur.Accepted, c.Accepted)
	}
	if b.within(c) {
		b.cur = c
		b.prefetch(c)
		return nil
	}
	// Past the reservation: wait for a background commit, which may
	// already cover c, and commit otherwise.
	b.waitIdle()
	if !b.within(c) {
		res := b.reservation(c)
		if err := b.commit(res); err != nil {
			return err
		}
		b.res = res
	}
	b.cur = c
	return nil
}

func (b *Bolt) within(c Counters) bool { return c.Next <= b.res.Next && c.PeerFloor <= b.res.PeerFloor }

// reservation is the marks to commit for c: a window ahead (Generated and
// Accepted exact).
func (b *Bolt) reservation(c Counters) Counters {
	if b.window == 1 {
		return c
	}
	return Counters{Next: max(b.res.Next, c.Next+b.window-1), PeerFloor: max(b.res.PeerFloor, c.PeerFloor+b.window-1),
		Generated: c.Generated, Accepted: c.Accepted}
}

func (b *Bolt) commit(res Counters) error {
	if err := b.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(keyCounters, encCounters(res)) }); err != nil {
		return fmt.Errorf("store: committing counters: %w", err)
	}
	return nil
}

// prefetch starts a background commit of the next reservation when c
// (inside the reservation) leaves less than half a window of headroom.
// A failed background commit is not reported: the Save that needs the
// reservation commits it itself and reports its error.
func (b *Bolt) prefetch(c Counters) {
	if b.window < 4 || b.pending {
		return
	}
	half := b.window / 2
	if b.res.Next-c.Next >= half && b.res.PeerFloor-c.PeerFloor >= half {
		return
	}
	res := b.reservation(c)
	b.pending = true
	go func() {
		err := b.commit(res)
		b.mu.Lock()
		defer b.mu.Unlock()
		if err == nil && res.Next >= b.res.Next && res.PeerFloor >= b.res.PeerFloor {
			b.res = res
		}
		b.pending = false
		b.idle.Broadcast()
	}()
}

func encCounters(c Counters) []byte {
	v := make([]byte, 32)
	binary.LittleEndian.PutUint64(v, c.Next)
	binary.LittleEndian.PutUint64(v[8:], c.PeerFloor)
	binary.LittleEndian.PutUint64(v[16:], c.Generated)
	binary.LittleEndian.PutUint64(v[24:], c.Accepted)
	return v
}

// decCounters reads a counters record: 32 bytes, or 24 from before
// Accepted (read as 0: the peer's witness then detects no rollback of this
// file until this module has accepted frames again).
func decCounters(v []byte) (Counters, error) {
	if len(v) != 24 && len(v) != 32 {
		return Counters{}, fmt.Errorf("counters record is %d bytes, want 32 (or 24)", len(v))
	}
	c := Counters{Next: binary.LittleEndian.Uint64(v), PeerFloor: binary.LittleEndian.Uint64(v[8:]), Generated: binary.LittleEndian.Uint64(v[16:])}
	if len(v) == 32 {
		c.Accepted = binary.LittleEndian.Uint64(v[24:])
	}
	return c, nil
}

// SavePairing replaces the pairing and resets the counters to zero.
func (b *Bolt) SavePairing(p Pairing) error {
	if p.Party != 0 && p.Party != 1 || len(p.KEM) > 255 || len(p.Secret) == 0 {
		return errors.New("store: malformed pairing")
	}
	v := make([]byte, 0, 2+len(p.KEM)+len(p.Secret))
	v = append(v, byte(p.Party), byte(len(p.KEM)))
	v = append(v, p.KEM...)
	v = append(v, p.Secret...)
	defer clear(v)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waitIdle()
	key, drop := keyPairing, keyPairingSealed
	if b.sealKey != nil {
		v, key, drop = sealPairing(b.sealKey, p), keyPairingSealed, keyPairing
	}
	err := b.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucket)
		if err := bk.Delete(drop); err != nil {
			return err
		}
		if err := bk.Put(key, v); err != nil {
			return err
		}
		return bk.Put(keyCounters, encCounters(Counters{}))
	})
	if err != nil {
		return fmt.Errorf("store: saving pairing: %w", err)
	}
	b.cur, b.res = Counters{}, Counters{}
	return nil
}

// LoadPairing returns the saved pairing or nil.
func (b *Bolt) LoadPairing() (*Pairing, error) {
	var p *Pairing
	err := b.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucket).Get(keyPairingSealed); v != nil {
			var err error
			p, err = unsealPairing(b.sealKey, v)
			return err
		}
		v := tx.Bucket(bucket).Get(keyPairing)
		if v == nil {
			return nil
		}
		if b.sealKey != nil {
			return errUnsealedWithKey
		}
		if len(v) < 2 || len(v) < 2+int(v[1])+1 || v[0] > 1 {
			return errors.New("store: malformed pairing record")
		}
		k := int(v[1])
		p = &Pairing{Party: int(v[0]), KEM: string(v[2 : 2+k]), Secret: append([]byte(nil), v[2+k:]...)}
		return nil
	})
	return p, err
}
