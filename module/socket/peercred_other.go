//go:build !linux && !darwin && !freebsd

package socket

// PeerCredSupported says whether this OS reports a Unix socket peer's uid.
// Here it does not (or kord does not ask it): a module refuses every peer
// unless its Access has Unverified set.
const PeerCredSupported = false

func peerCredFD(int) (PeerCred, error) { return PeerCred{-1, -1}, errNoPeerCred }
