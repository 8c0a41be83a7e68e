package store

import (
	"bytes"
	"sync"
)

// MemPairing is an in-memory PairingStore: a Mem that also keeps the
// pairing, for modules that live and die with their process (an
// in-process pair of parties), safe for concurrent use.
type MemPairing struct {
	Mem
	pmu     sync.Mutex
	pairing *Pairing
}

var _ PairingStore = (*MemPairing)(nil)

// SavePairing replaces the pairing and resets the counters to zero.
func (m *MemPairing) SavePairing(p Pairing) error {
	m.pmu.Lock()
	defer m.pmu.Unlock()
	if m.pairing != nil {
		clear(m.pairing.Secret)
	}
	p.Secret = bytes.Clone(p.Secret)
	m.pairing = &p
	return m.Save(Counters{})
}

// LoadPairing returns a copy of the saved pairing, or nil if there is none.
func (m *MemPairing) LoadPairing() (*Pairing, error) {
	m.pmu.Lock()
	defer m.pmu.Unlock()
	if m.pairing == nil {
		return nil, nil
	}
	p := *m.pairing
	p.Secret = bytes.Clone(p.Secret)
	return &p, nil
}
