// Package peertls makes and loads the certificates that secure the link
// between the two party daemons with mutual TLS 1.3.
//
// A fresh CA (ECDSA P-256) signs one certificate per party. Party b's
// certificate carries the DNS name PartyName(b) ("kord-party-0" or
// "kord-party-1"), and each side checks that the other presents the other
// party's name, not merely a certificate of the same CA: party 0 dials with
// that name as the TLS server name (whatever address it dials), and party
// 1 checks party 0's client certificate against it. Operators with their own
// CA may issue certificates with other names and give each party the name to
// expect (Config's peerName).
package peertls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// DefaultValidity is how long Init's certificates are valid.
const DefaultValidity = 2 * 365 * 24 * time.Hour

// CAFile is the CA certificate's file name in an Init directory.
const CAFile = "ca.crt"

// PartyName is the name party b's certificate carries (a DNS SAN) and the
// name the other party expects by default.
func PartyName(b int) string { return fmt.Sprintf("kord-party-%d", b) }

// CertFile and KeyFile are party b's certificate and key file names in an
// Init directory.
func CertFile(b int) string { return fmt.Sprintf("party%d.crt", b) }

// KeyFile: see CertFile.
func KeyFile(b int) string { return fmt.Sprintf("party%d.key", b) }

// Files are the paths of one party's TLS material.
type Files struct{ Cert, Key, CA string }

// PartyFiles returns party b's files in an Init directory.
func PartyFiles(dir string, b int) Files {
	return Files{Cert: filepath.Join(dir, CertFile(b)), Key: filepath.Join(dir, KeyFile(b)), CA: filepath.Join(dir, CAFile)}
}

// CA is a certificate authority held in memory.
type CA struct {
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	validity time.Duration
}

// NewCA makes a fresh self-signed CA whose certificates are valid for
// validity (DefaultValidity if ≤ 0).
func NewCA(validity time.Duration) (*CA, error) {
	if validity <= 0 {
		validity = DefaultValidity
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "kord peer-link CA"},
		NotBefore:             now.Add(-5 * time.Minute),
		NotAfter:              now.Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return nil, err
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: c, key: k, validity: validity}, nil
}

// CertPEM is the CA's certificate in PEM.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// Issue makes a key and a certificate for name (a DNS SAN and the common
// name), usable as TLS client and server, and returns both in PEM (the key
// PKCS #8).
func (ca *CA) Issue(name string) (certPEM, keyPEM []byte, err error) {
	return ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		DNSNames:    []string{name},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	})
}

// issue makes a P-256 key and a certificate for it from tmpl's names and
// uses, signed by ca, valid as long as ca, for digital signatures only,
// and returns both in PEM (the key PKCS #8).
func (ca *CA) issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore, tmpl.NotAfter = ca.cert.NotBefore, ca.cert.NotAfter
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &k.PublicKey, ca.key)
	if err != nil {
		return nil, nil, err
	}
	kd, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n.Add(n, big.NewInt(1))
}

// Init writes a fresh CA certificate (CAFile) and a certificate and key
// for each party (CertFile, KeyFile; keys mode 0600) into dir, creating it
// (mode 0700) if needed. The CA's private key is never written: to renew
// or replace a certificate, run Init again and replace all five files at
// both sites. Init refuses to overwrite any existing file.
func Init(dir string, validity time.Duration) error { return InitApps(dir, validity, nil) }

// InitApps is Init that also issues, under the same CA, a client
// certificate and key for each application name in apps (AppCertFile,
// AppKeyFile; IssueApp), before the CA's key is discarded.
func InitApps(dir string, validity time.Duration, apps []string) error {
	names := []string{CAFile, CertFile(0), KeyFile(0), CertFile(1), KeyFile(1)}
	seen := map[string]bool{}
	for _, a := range apps {
		if err := CheckAppName(a); err != nil {
			return fmt.Errorf("peertls: %w", err)
		}
		if seen[a] {
			return fmt.Errorf("peertls: application %q named twice", a)
		}
		seen[a] = true
		names = append(names, AppCertFile(a), AppKeyFile(a))
	}
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			return fmt.Errorf("peertls: %s already exists: remove the old files or choose another directory", filepath.Join(dir, n))
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("peertls: %w", err)
	}
	ca, err := NewCA(validity)
	if err != nil {
		return fmt.Errorf("peertls: CA: %w", err)
	}
	if err := writeNew(filepath.Join(dir, CAFile), ca.CertPEM(), 0o644); err != nil {
		return err
	}
	for b := 0; b < 2; b++ {
		cert, key, err := ca.Issue(PartyName(b))
		if err != nil {
			return fmt.Errorf("peertls: party %d: %w", b, err)
		}
		if err := writeNew(filepath.Join(dir, KeyFile(b)), key, 0o600); err != nil {
			return err
		}
		if err := writeNew(filepath.Join(dir, CertFile(b)), cert, 0o644); err != nil {
			return err
		}
	}
	for _, a := range apps {
		cert, key, err := ca.IssueApp(a)
		if err != nil {
			return fmt.Errorf("peertls: application %s: %w", a, err)
		}
		if err := writeNew(filepath.Join(dir, AppKeyFile(a)), key, 0o600); err != nil {
			return err
		}
		if err := writeNew(filepath.Join(dir, AppCertFile(a)), cert, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeNew creates path (which must not exist) with mode perm.
func writeNew(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("peertls: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("peertls: %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("peertls: %s: %w", path, err)
	}
	return nil
}

// Config loads party b's TLS material and returns its side of the peer
// link's mutual TLS 1.3: party 0 is the client and requires a server
// certificate for peerName, party 1 the server and requires a client
// certificate for peerName; either must chain to the CA in f.CA. An
// empty peerName means PartyName(1-b).
func Config(f Files, b int, peerName string) (*tls.Config, error) {
	if b != 0 && b != 1 {
		return nil, fmt.Errorf("peertls: party %d is not 0 or 1", b)
	}
	if peerName == "" {
		peerName = PartyName(1 - b)
	}
	kp, err := loadPair(f.Cert, f.Key)
	if err != nil {
		return nil, err
	}
	pool, err := loadCA(f.CA)
	if err != nil {
		return nil, err
	}
	c := &tls.Config{Certificates: []tls.Certificate{kp}, MinVersion: tls.VersionTLS13}
	if b == 0 {
		// The server name, not the dialled address, is what party 1's
		// certificate must carry.
		c.RootCAs, c.ServerName = pool, peerName
		return c, nil
	}
	c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("peertls: the peer presented no certificate")
		}
		if err := cs.PeerCertificates[0].VerifyHostname(peerName); err != nil {
			return fmt.Errorf("peertls: the peer's certificate is not for %s: %w", peerName, err)
		}
		return nil
	}
	return c, nil
}

// loadPair loads a certificate and its key and checks that the
// certificate is valid now; errors name the files.
func loadPair(cert, key string) (tls.Certificate, error) {
	kp, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return kp, fmt.Errorf("peertls: certificate %s and key %s: %w", cert, key, err)
	}
	if kp.Leaf == nil { // GODEBUG=x509keypairleaf=0
		if kp.Leaf, err = x509.ParseCertificate(kp.Certificate[0]); err != nil {
			return kp, fmt.Errorf("peertls: certificate %s: %w", cert, err)
		}
	}
	if now := time.Now(); now.After(kp.Leaf.NotAfter) || now.Before(kp.Leaf.NotBefore) {
		return kp, fmt.Errorf("peertls: certificate %s is valid only from %s to %s: make new ones (kord certs)",
			cert, kp.Leaf.NotBefore.UTC().Format(time.RFC3339), kp.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return kp, nil
}

// loadCA reads a PEM CA certificate file into a pool.
func loadCA(ca string) (*x509.CertPool, error) {
	pemCA, err := os.ReadFile(ca)
	if err != nil {
		return nil, fmt.Errorf("peertls: CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCA) {
		return nil, fmt.Errorf("peertls: CA: no PEM certificate in %s", ca)
	}
	return pool, nil
}
