package store

// Pairing is the persistent result of a module's one-time pairing: its
// party, the pairing KEM and the channel secret K_ch. It is the module's
// most sensitive secret; only a module (never a host) holds a Pairing.
type Pairing struct {
	Party  int
	KEM    string
	Secret []byte // K_ch, 32 bytes
}

// PairingStore is a Store that also keeps the pairing, so a module daemon
// can restart without re-pairing. A module whose Store implements it saves
// the pairing (and resets the counters) when pairing completes.
type PairingStore interface {
	Store
	// SavePairing replaces the pairing and resets the counters to zero in
	// one atomic commit.
	SavePairing(Pairing) error
	// LoadPairing returns the saved pairing, or nil if there is none.
	LoadPairing() (*Pairing, error)
}
