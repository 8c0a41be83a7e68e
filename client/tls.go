package client

import (
	"google.golang.org/grpc/credentials"

	"github.com/kord-fss/kord/internal/peertls"
)

// TLSFiles are an application's credentials for a party's TLS
// application API: its certificate and key (kord certs --apps NAME
// writes app-NAME.crt and app-NAME.key), the CA the party's certificate
// chains to (ca.crt), and the name the party's certificate carries
// (kord certs names party b's kord-party-b).
type TLSFiles struct {
	Cert, Key, CA string
	ServerName    string
}

// AppTLS loads f as transport credentials for Dial or
// PoolOptions.Creds: TLS 1.3, the application's client certificate, the
// party's certificate checked against f.CA and f.ServerName. The error
// names the file that is wrong.
func AppTLS(f TLSFiles) (credentials.TransportCredentials, error) {
	c, err := peertls.AppClientConfig(peertls.Files{Cert: f.Cert, Key: f.Key, CA: f.CA}, f.ServerName)
	if err != nil {
		return nil, err
	}
	return credentials.NewTLS(c), nil
}

// DialTLS is Dial with AppTLS(f)'s credentials.
func DialTLS(addr string, f TLSFiles) (*Client, error) {
	creds, err := AppTLS(f)
	if err != nil {
		return nil, err
	}
	return Dial(addr, creds)
}

// DialParty dials party b's application API at addr: over TLS with f,
// the party's certificate checked to carry party b's name (kord certs:
// kord-party-b, whatever f.ServerName says), or, when f is nil, without
// transport security (loopback, or a Unix socket where the kernel names
// the application).
func DialParty(addr string, b int, f *TLSFiles) (*Client, error) {
	if f == nil {
		return Dial(addr, nil)
	}
	ff := *f
	ff.ServerName = peertls.PartyName(b)
	return DialTLS(addr, ff)
}
