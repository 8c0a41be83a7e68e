package service

import "fmt"

// ProtocolVersion is the peer protocol version this party speaks. Both
// parties of a pair state theirs at the handshake (Hello.version,
// HelloReply.version) and refuse a session with another. 2: recovery
// from each site's own record (issue 33); 0 is a party from before
// versions were stated.
const ProtocolVersion = 2

// checkVersion refuses a peer of another protocol version with a message
// that says which and what to do.
func checkVersion(peer uint32) error {
	if peer == ProtocolVersion {
		return nil
	}
	v := fmt.Sprintf("version %d", peer)
	if peer == 0 {
		v = "a version from before protocol versions were stated"
	}
	return fmt.Errorf("%w: the peer party speaks peer protocol %s, this party %d: both parties of a pair must run the same protocol; upgrade or downgrade them together (docs/operations.md, \"Upgrading a pair\")",
		errVersion, v, ProtocolVersion)
}

// errVersion marks a session refused for the peer's protocol version.
var errVersion = fmt.Errorf("service: peer protocol version mismatch")
