package peertls

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
)

// AppScheme is the URI scheme of an application certificate's identity:
// the certificate of application NAME carries the URI SAN kord-app:NAME.
const AppScheme = "kord-app"

// MaxAppName is the longest application name (bytes).
const MaxAppName = 128

// CheckAppName says what is wrong with an application name, or nil: 1 to
// MaxAppName characters of A-Z, a-z, 0-9, '.', '_' and '-'.
func CheckAppName(name string) error {
	if name == "" || len(name) > MaxAppName {
		return fmt.Errorf("application name %q: want 1..%d characters", name, MaxAppName)
	}
	for _, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("application name %q: character %q is not one of A-Z a-z 0-9 . _ -", name, c)
		}
	}
	return nil
}

// AppCertFile and AppKeyFile are application name's certificate and key
// file names in an Init directory.
func AppCertFile(name string) string { return "app-" + name + ".crt" }

// AppKeyFile: see AppCertFile.
func AppKeyFile(name string) string { return "app-" + name + ".key" }

// AppFiles returns application name's files in an Init directory.
func AppFiles(dir, name string) Files {
	return Files{Cert: filepath.Join(dir, AppCertFile(name)), Key: filepath.Join(dir, AppKeyFile(name)), CA: filepath.Join(dir, CAFile)}
}

// IssueApp makes a key and a client certificate for application name: its
// only name is the URI SAN kord-app:name (no DNS name, so it can never pass
// for a party on the peer link), usable for TLS client authentication
// only. Both are returned in PEM (the key PKCS #8).
func (ca *CA) IssueApp(name string) (certPEM, keyPEM []byte, err error) {
	if err := CheckAppName(name); err != nil {
		return nil, nil, err
	}
	return ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: AppScheme + ":" + name},
		URIs:        []*url.URL{{Scheme: AppScheme, Opaque: name}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// AppName returns the application name a verified client certificate
// carries: its one kord-app URI SAN. A certificate with none, or more
// than one, or a malformed name, has no application identity.
func AppName(c *x509.Certificate) (string, error) {
	name, n := "", 0
	for _, u := range c.URIs {
		if u.Scheme != AppScheme {
			continue
		}
		n++
		name = u.Opaque
	}
	switch {
	case n == 0:
		return "", errors.New("the client certificate carries no kord-app:NAME URI (issue application certificates with kord certs --apps NAME)")
	case n > 1:
		return "", errors.New("the client certificate carries more than one kord-app URI")
	}
	if err := CheckAppName(name); err != nil {
		return "", fmt.Errorf("the client certificate's kord-app URI: %w", err)
	}
	return name, nil
}

// AppServerConfig is the application API's TLS 1.3 server side: the
// party presents cert/key (its kord certs certificate serves), and every
// application must present a client certificate that chains to the CA in
// ca and carries one kord-app:NAME URI (AppName). Errors name the file.
func AppServerConfig(cert, key, ca string) (*tls.Config, error) {
	kp, err := loadPair(cert, key)
	if err != nil {
		return nil, err
	}
	pool, err := loadCA(ca)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{kp}, MinVersion: tls.VersionTLS13,
		ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("peertls: the application presented no certificate")
			}
			_, err := AppName(cs.PeerCertificates[0])
			return err
		}}, nil
}

// AppClientConfig is an application's TLS 1.3 client side of the
// application API: it presents f.Cert/f.Key (an application certificate)
// and requires the party's certificate to chain to f.CA and carry
// serverName (a party's: PartyName(b)).
func AppClientConfig(f Files, serverName string) (*tls.Config, error) {
	if serverName == "" {
		return nil, errors.New("peertls: no server name to expect of the party's certificate (kord certs names party b kord-party-b)")
	}
	kp, err := loadPair(f.Cert, f.Key)
	if err != nil {
		return nil, err
	}
	pool, err := loadCA(f.CA)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{kp}, MinVersion: tls.VersionTLS13, RootCAs: pool, ServerName: serverName}, nil
}
