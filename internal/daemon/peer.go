package daemon

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"

	"google.golang.org/grpc/credentials"

	"github.com/kord-fss/kord/internal/peertls"
	"github.com/kord-fss/kord/module/socket"
)

// PeerTLS builds the peer link's transport credentials from the party's
// flags: mutual TLS 1.3 from PEM files (peertls.Config), or plaintext only
// when asked for explicitly. It returns nil credentials for plaintext.
func PeerTLS(cert, key, ca, peerName string, plaintext bool, party int) (credentials.TransportCredentials, *tls.Config, error) {
	given := cert != "" || key != "" || ca != ""
	switch {
	case plaintext && (given || peerName != ""):
		return nil, nil, BadInput("--peer-plaintext and --tls-cert/--tls-key/--tls-ca/--tls-peer-name exclude each other: give one or the other")
	case plaintext:
		return nil, nil, nil
	case !given:
		return nil, nil, BadInput("the peer link needs mutual TLS: give --tls-cert, --tls-key and --tls-ca (make them with kord certs --dir DIR), or run it without transport security with an explicit --peer-plaintext")
	case cert == "" || key == "" || ca == "":
		return nil, nil, BadInput("--tls-cert, --tls-key and --tls-ca go together (all three are needed)")
	}
	c, err := peertls.Config(peertls.Files{Cert: cert, Key: key, CA: ca}, party, peerName)
	if err != nil {
		return nil, nil, BadInput("--tls-cert/--tls-key/--tls-ca: %v", err)
	}
	return credentials.NewTLS(c), c, nil
}

// LogRefusals wraps creds so that the peer connections its server side
// refuses are logged to log.
func LogRefusals(creds credentials.TransportCredentials, log *slog.Logger) credentials.TransportCredentials {
	return loggedCreds{creds, log}
}

// loggedCreds logs the peer connections that party 1's TLS refuses (an
// unknown CA, the wrong peer name, no certificate): gRPC drops them
// silently, and they are what an operator needs to see when the link does
// not come up.
type loggedCreds struct {
	credentials.TransportCredentials
	log *slog.Logger
}

func (c loggedCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	nc, ai, err := c.TransportCredentials.ServerHandshake(conn)
	if err != nil {
		c.log.Warn("peer link: TLS handshake refused", "remote", conn.RemoteAddr().String(), "err", err)
	}
	return nc, ai, err
}

func (c loggedCreds) Clone() credentials.TransportCredentials {
	return loggedCreds{c.TransportCredentials.Clone(), c.log}
}

// Listen listens on addr: host:port, or unix:///path for a Unix socket.
func Listen(addr string) (net.Listener, error) {
	if len(addr) > 7 && addr[:7] == "unix://" {
		return socket.Listen(addr[7:])
	}
	return net.Listen("tcp", addr)
}

// CheckOwnCert checks, before the party says ready, that its own
// certificate (tc, from PeerTLS) carries ownName, the name the peer will
// require (peertls.PartyName(party) unless given: the peer's default
// --tls-peer-name). A party given the other party's certificate is
// refused at start instead of failing every handshake later.
func CheckOwnCert(tc *tls.Config, party int, ownName string) error {
	leaf := tc.Certificates[0].Leaf
	byDefault := ownName == ""
	if byDefault {
		ownName = peertls.PartyName(party)
	}
	if err := leaf.VerifyHostname(ownName); err != nil {
		fix := fmt.Sprintf("give party %d's own certificate (kord certs writes %s)", party, peertls.CertFile(party))
		if byDefault {
			fix += ", or, if the peer runs with --tls-peer-name NAME, --tls-name NAME here"
		}
		return BadInput("--tls-cert: the peer will require the name %s and this certificate does not carry it (%v): %s", ownName, err, fix)
	}
	return nil
}
