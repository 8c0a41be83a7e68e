package service

import (
	"crypto/tls"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/credentials"

	"github.com/kord-fss/kord/module/socket"
)

// TestPeerLinkNeedsCredsOrPlaintext: a Config that names neither peer
// credentials nor plaintext is refused (the peer link is never plaintext
// by omission), and so is one that names both; either one alone works,
// for both parties.
func TestPeerLinkNeedsCredsOrPlaintext(t *testing.T) {
	mod := socket.Dial(filepath.Join(t.TempDir(), "none.sock"), 0) // never dialled here
	creds := credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS13})
	for _, party := range []int{0, 1} {
		base := Config{Party: party, Module: mod, PeerAddr: "127.0.0.1:1"}
		for _, c := range []struct {
			name  string
			creds credentials.TransportCredentials
			plain bool
			ok    bool
		}{{"neither", nil, false, false}, {"both", creds, true, false}, {"creds", creds, false, true}, {"plaintext", nil, true, true}} {
			cfg := base
			cfg.PeerCreds, cfg.PeerPlaintext = c.creds, c.plain
			p, err := New(cfg)
			if c.ok != (err == nil) {
				t.Fatalf("party %d, %s: New: %v", party, c.name, err)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "PeerCreds") || !strings.Contains(err.Error(), "PeerPlaintext") {
					t.Fatalf("party %d, %s: the error does not name both fields: %v", party, c.name, err)
				}
				continue
			}
			if got, want := p.peerCreds().Info().SecurityProtocol, map[bool]string{true: "insecure", false: "tls"}[c.plain]; got != want {
				t.Fatalf("party %d, %s: peer link security %q, want %q", party, c.name, got, want)
			}
			p.Close()
		}
	}
}
