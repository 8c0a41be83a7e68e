package peertls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// handshake runs party 0's and party 1's sides of a TLS handshake over
// loopback TCP and returns each side's error.
func handshake(t *testing.T, c0, c1 *tls.Config) (err0, err1 error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		s := tls.Server(c, c1)
		if err := s.Handshake(); err != nil {
			done <- err
			return
		}
		_, err = s.Read(make([]byte, 1))
		done <- err
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl := tls.Client(c, c0)
	err0 = cl.Handshake()
	if err0 == nil {
		// TLS 1.3: the server's verdict on the client certificate
		// arrives after the client's handshake has returned.
		if _, err := cl.Write([]byte{1}); err != nil {
			err0 = err
		}
	}
	c.Close()
	err1 = <-done
	if err0 == nil && err1 == nil {
		if st := cl.ConnectionState(); st.Version != tls.VersionTLS13 {
			t.Fatalf("handshake: version %x, want TLS 1.3", st.Version)
		}
	}
	return err0, err1
}

func load(t *testing.T, f Files, b int, peer string) *tls.Config {
	t.Helper()
	c, err := Config(f, b, peer)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeIssued writes a certificate of ca for name (and its key) into dir.
func writeIssued(t *testing.T, ca *CA, dir, name string) (cert, key string) {
	t.Helper()
	c, k, err := ca.Issue(name)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(cert, c, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, k, 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// TestInitFiles: Init writes the CA certificate and both parties'
// certificates and keys (keys 0600, no CA key), and refuses to overwrite.
func TestInitFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	if err := Init(dir, 0); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "ca.crt party0.crt party0.key party1.crt party1.key" {
		t.Fatalf("Init wrote %s", got)
	}
	for b := 0; b < 2; b++ {
		fi, err := os.Stat(PartyFiles(dir, b).Key)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("party %d key mode %v", b, fi.Mode().Perm())
		}
		if _, err := Config(PartyFiles(dir, b), b, ""); err != nil {
			t.Fatalf("party %d: %v", b, err)
		}
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v", fi.Mode().Perm())
	}
	if err := Init(dir, 0); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second Init: %v", err)
	}
}

// TestPeerIdentity: the two parties of one Init directory complete a
// TLS 1.3 handshake; a certificate of another CA, or of the same CA for
// another name (including the other party's own), is refused by the side
// that checks it.
func TestPeerIdentity(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir, 0); err != nil {
		t.Fatal(err)
	}
	f0, f1 := PartyFiles(dir, 0), PartyFiles(dir, 1)
	if e0, e1 := handshake(t, load(t, f0, 0, ""), load(t, f1, 1, "")); e0 != nil || e1 != nil {
		t.Fatalf("good pair: party 0 %v, party 1 %v", e0, e1)
	}

	// Another CA issuing the right names.
	other := filepath.Join(t.TempDir(), "other")
	if err := Init(other, 0); err != nil {
		t.Fatal(err)
	}
	o0, o1 := PartyFiles(other, 0), PartyFiles(other, 1)
	o0.CA, o1.CA = f0.CA, f1.CA // but trusting the right CA
	var unknown x509.UnknownAuthorityError
	if e0, e1 := handshake(t, load(t, o0, 0, ""), load(t, f1, 1, "")); e1 == nil || !errors.As(e1, &unknown) {
		t.Fatalf("party 1 accepted a client of another CA: party 0 %v, party 1 %v", e0, e1)
	}
	if e0, _ := handshake(t, load(t, f0, 0, ""), load(t, o1, 1, "")); e0 == nil || !errors.As(e0, &unknown) {
		t.Fatalf("party 0 accepted a server of another CA: %v", e0)
	}

	// The same CA, the wrong names: party 1's key playing party 0, and
	// party 0's key playing party 1.
	swapped0 := Files{Cert: f1.Cert, Key: f1.Key, CA: f0.CA}
	if _, e1 := handshake(t, load(t, swapped0, 0, ""), load(t, f1, 1, "")); e1 == nil || !strings.Contains(e1.Error(), "not for kord-party-0") {
		t.Fatalf("party 1 accepted party 1's certificate as party 0's: %v", e1)
	}
	swapped1 := Files{Cert: f0.Cert, Key: f0.Key, CA: f1.CA}
	if e0, _ := handshake(t, load(t, f0, 0, ""), load(t, swapped1, 1, "")); e0 == nil || !strings.Contains(e0.Error(), "kord-party-1") {
		t.Fatalf("party 0 accepted party 0's certificate as party 1's: %v", e0)
	}

	// A CA that issues for other names: an explicit peer name selects
	// which one is the peer.
	ca, err := NewCA(0)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	cdir := t.TempDir()
	ac, ak := writeIssued(t, ca, cdir, "site-a.example")
	bc, bk := writeIssued(t, ca, cdir, "site-b.example")
	xc, xk := writeIssued(t, ca, cdir, "other.example")
	a := Files{Cert: ac, Key: ak, CA: caFile}
	bf := Files{Cert: bc, Key: bk, CA: caFile}
	x := Files{Cert: xc, Key: xk, CA: caFile}
	if e0, e1 := handshake(t, load(t, a, 0, "site-b.example"), load(t, bf, 1, "site-a.example")); e0 != nil || e1 != nil {
		t.Fatalf("named pair: party 0 %v, party 1 %v", e0, e1)
	}
	if _, e1 := handshake(t, load(t, x, 0, "site-b.example"), load(t, bf, 1, "site-a.example")); e1 == nil {
		t.Fatal("party 1 accepted other.example as site-a.example")
	}
	if e0, _ := handshake(t, load(t, a, 0, "site-b.example"), load(t, x, 1, "site-a.example")); e0 == nil {
		t.Fatal("party 0 accepted other.example as site-b.example")
	}
}
