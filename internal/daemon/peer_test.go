package daemon

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestPeerTLSRefusals: plaintext only when asked for alone; TLS needs all
// three files; every refusal is a UsageError.
func TestPeerTLSRefusals(t *testing.T) {
	if c, tc, err := PeerTLS("", "", "", "", true, 0); c != nil || tc != nil || err != nil {
		t.Fatalf("plaintext: %v %v %v", c, tc, err)
	}
	for name, args := range map[string][4]string{
		"plaintext with a cert": {"c.pem", "", "", ""},
		"plaintext with a name": {"", "", "", "kord-party-1"},
	} {
		if _, _, err := PeerTLS(args[0], args[1], args[2], args[3], true, 0); !errors.As(err, new(UsageError)) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, args := range map[string][3]string{
		"nothing":      {"", "", ""},
		"no CA":        {"c.pem", "k.pem", ""},
		"missing file": {"/nonexistent/c.pem", "/nonexistent/k.pem", "/nonexistent/ca.pem"},
	} {
		if _, _, err := PeerTLS(args[0], args[1], args[2], "", false, 0); !errors.As(err, new(UsageError)) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestListen: host:port listens on TCP, unix:///path on a Unix socket.
func TestListen(t *testing.T) {
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if l.Addr().Network() != "tcp" {
		t.Errorf("network %s", l.Addr().Network())
	}
	l.Close()
	path := filepath.Join(t.TempDir(), "app.sock")
	if l, err = Listen("unix://" + path); err != nil {
		t.Skip("no Unix socket here:", err)
	}
	defer l.Close()
	if l.Addr().Network() != "unix" || l.Addr().String() != path {
		t.Errorf("listening on %s %s", l.Addr().Network(), l.Addr())
	}
}

// TestModuleAccess: a module with no party uid and no --allow-same-uid
// would refuse every host, which is bad input.
func TestModuleAccess(t *testing.T) {
	if _, err := ModuleAccess(nil, false, false); !errors.As(err, new(UsageError)) {
		t.Fatalf("no rule: %v", err)
	}
	a, err := ModuleAccess(nil, true, false)
	if err != nil || !a.SameUID {
		t.Fatalf("same uid: %+v %v", a, err)
	}
}
