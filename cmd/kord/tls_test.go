package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kord-fss/kord/fss"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 (its own CA)
// and its key as PEM files under dir and returns their paths.
func selfSigned(t *testing.T, dir, name string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(mrand.Int64N(1 << 62)),
		Subject:               pkix.Name{CommonName: "kord test " + name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func tlsArgs(cert, key, ca string) []string {
	return []string{"--tls-cert", cert, "--tls-key", key, "--tls-ca", ca}
}

// TestPeerLinkTLS: two party processes with mutual TLS on the peer link
// pair their modules and deliver verified keys; a party whose certificate
// the other does not trust (either direction) cannot pair.
func TestPeerLinkTLS(t *testing.T) {
	certDir := t.TempDir()
	good, goodKey := selfSigned(t, certDir, "pair")
	rogue, rogueKey := selfSigned(t, certDir, "rogue")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	c, err := startCluster(ctx, t.TempDir(), clusterOpts{Bin: kordBin, Batch: 32,
		PartyArgs: [2][]string{tlsArgs(good, goodKey, good), tlsArgs(good, goodKey, good)}})
	if err != nil {
		t.Fatalf("TLS cluster: %v", err)
	}
	defer c.Close()
	rng := mrand.New(mrand.NewPCG(1, 2))
	for _, k := range []svcClass{{mode: "bound", tier: "otp", typ: fss.DPF, l: 16, n: 16}, {mode: "bound", tier: "mac", typ: fss.DCF, l: 32, n: 32}} {
		reqs, truth := svcRequests(k, uint64(1+len(k.tier)*1000), 100, rng)
		reps, _, err := svcStream(ctx, c.apps, reqs)
		if err != nil {
			t.Fatalf("%s over TLS: %v", k.name(), err)
		}
		for i, tr := range truth {
			if ok, bad := svcVerify(k, tr, reps[0][i], reps[1][i], rng); ok != 1 || bad != 0 {
				t.Fatalf("%s over TLS: request %d did not verify", k.name(), i)
			}
		}
	}

	for name, args := range map[string][2][]string{
		// party 0 does not trust party 1's certificate
		"server not trusted": {tlsArgs(rogue, rogueKey, rogue), tlsArgs(good, goodKey, good)},
		// party 1 does not trust party 0's client certificate
		"client not trusted": {tlsArgs(rogue, rogueKey, good), tlsArgs(good, goodKey, good)},
	} {
		pctx, pcancel := context.WithTimeout(ctx, 40*time.Second)
		bad, err := startCluster(pctx, t.TempDir(), clusterOpts{Bin: kordBin, PartyArgs: args})
		pcancel()
		if err == nil {
			bad.Close()
			t.Fatalf("%s: the parties paired", name)
		}
		t.Logf("%s: refused: %v", name, err)
	}
}
