// Package store keeps a module's counters behind a small interface, so the
// services can put them in bbolt while tests and the in-process demo use
// memory. Counters are not secret; the module commits them before it emits
// anything that depends on them, so a restarted module never reuses one.
package store

import "sync"

// Counters are a module's persistent counters.
type Counters struct {
	// Next is the next counter to assign to an own request.
	Next uint64
	// PeerFloor is the replay high-water mark: the smallest counter a fresh
	// peer frame may carry.
	PeerFloor uint64
	// Generated counts keys generated.
	Generated uint64
	// Accepted is the counter after the last peer frame this module
	// accepted: PeerFloor as accepted frames alone raise it, never moved by
	// a resync (a witness Reconcile) nor by a store's reservation. It is
	// the rollback witness's evidence: every counter below it was assigned
	// by the peer and committed there before the frame was sealed. A store
	// may resume below the last saved value (Bolt: the value of its last
	// commit), never above it.
	Accepted uint64
}

// Store loads and atomically saves counters.
type Store interface {
	Load() (Counters, error)
	Save(Counters) error
}

// Mem is an in-memory Store, safe for concurrent use.
type Mem struct {
	mu sync.Mutex
	c  Counters
}

// Load returns the saved counters.
func (m *Mem) Load() (Counters, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.c, nil
}

// Save replaces the saved counters.
func (m *Mem) Save(c Counters) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.c = c
	return nil
}
