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
