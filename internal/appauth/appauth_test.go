package appauth

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/kord-fss/kord/internal/peertls"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/service"
)

// TestCheck: each flag combination gets its mode or an error naming the
// flag at fault.
func TestCheck(t *testing.T) {
	uids := map[int]string{os.Getuid(): "a"}
	cases := []struct {
		c    Config
		mode Mode
		err  string // substring of the error ("" = none)
	}{
		{Config{Listen: "0.0.0.0:7300"}, "", "not loopback"},
		{Config{Listen: "10.0.0.5:7300"}, "", "--app-plaintext"},
		{Config{Listen: "0.0.0.0:7300", Plaintext: true}, ModePlaintext, ""},
		{Config{Listen: "127.0.0.1:7300"}, ModePlaintext, ""},
		{Config{Listen: "[::1]:7300"}, ModePlaintext, ""},
		{Config{Listen: "localhost:7300"}, ModePlaintext, ""},
		{Config{Listen: "127.0.0.1:7300", TLSCert: "c", TLSKey: "k", CA: "ca"}, ModeTLS, ""},
		{Config{Listen: "0.0.0.0:7300", TLSCert: "c", TLSKey: "k", CA: "ca"}, ModeTLS, ""},
		{Config{Listen: "0.0.0.0:7300", TLSCert: "c", CA: "ca"}, "", "go together"},
		{Config{Listen: "0.0.0.0:7300", TLSCert: "c", TLSKey: "k", CA: "ca", Plaintext: true}, "", "exclude each other"},
		{Config{Listen: "unix:///tmp/x.sock"}, "", "--app-uid"},
		{Config{Listen: "unix:///tmp/x.sock", UIDs: uids}, ModeUID, ""},
		{Config{Listen: "unix:///tmp/x.sock", Plaintext: true}, ModePlaintext, ""},
		{Config{Listen: "unix:///tmp/x.sock", TLSCert: "c", TLSKey: "k", CA: "ca"}, "", "Unix socket"},
		{Config{Listen: "127.0.0.1:1", UIDs: uids}, "", "--app-uid is for a Unix socket"},
		{Config{Listen: "127.0.0.1:1", Operator: "bad name"}, "", "--operator"},
	}
	for _, c := range cases {
		m, err := c.c.Check()
		if c.err == "" && (err != nil || m != c.mode) || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%+v: mode %q, err %v; want mode %q, error with %q", c.c, m, err, c.mode, c.err)
		}
	}
}

// TestParseUIDs: --app-uid's forms and its bad input.
func TestParseUIDs(t *testing.T) {
	m, err := ParseUIDs("a=1000, b=1001")
	if err != nil || m[1000] != "a" || m[1001] != "b" || len(m) != 2 {
		t.Fatalf("%v %v", m, err)
	}
	for _, bad := range []string{"a", "a=1,b=1", "bad name=1", "a=-3", "a=no-such-user-kord"} {
		if _, err := ParseUIDs(bad); err == nil || !strings.Contains(err.Error(), "--app-uid") {
			t.Errorf("%q: %v, want an error naming --app-uid", bad, err)
		}
	}
}

// TestBadFilesNamed: a TLS setting whose file is missing or is no
// certificate fails at start with the file's name.
func TestBadFilesNamed(t *testing.T) {
	dir := t.TempDir()
	if err := peertls.Init(dir, time.Hour); err != nil {
		t.Fatal(err)
	}
	f := peertls.PartyFiles(dir, 0)
	junk := filepath.Join(dir, "junk.pem")
	os.WriteFile(junk, []byte("not a certificate"), 0o600)
	for _, c := range []Config{
		{Listen: "127.0.0.1:0", TLSCert: filepath.Join(dir, "missing.crt"), TLSKey: f.Key, CA: f.CA},
		{Listen: "127.0.0.1:0", TLSCert: f.Cert, TLSKey: f.Key, CA: junk},
		{Listen: "127.0.0.1:0", TLSCert: junk, TLSKey: f.Key, CA: f.CA},
	} {
		_, _, err := c.ServerOptions(nil)
		if err == nil || !strings.Contains(err.Error(), "--app-tls-cert") || !(strings.Contains(err.Error(), "missing.crt") || strings.Contains(err.Error(), "junk.pem")) {
			t.Errorf("%+v: %v, want an error naming the flag and file", c, err)
		}
	}
}

// serveStatus serves a KeySource whose Status reports the caller, with
// c's authentication, on l.
func serveStatus(t *testing.T, c Config, l net.Listener) {
	t.Helper()
	opts, _, err := c.ServerOptions(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(opts...)
	pb.RegisterKeySourceServer(s, whoami{})
	go s.Serve(l)
	t.Cleanup(s.Stop)
}

// whoami answers Status, and Get with the caller's name in the reply's
// error field.
type whoami struct {
	pb.UnimplementedKeySourceServer
}

func (whoami) Status(context.Context, *pb.StatusRequest) (*pb.StatusReply, error) {
	return &pb.StatusReply{Paired: true}, nil
}

func (whoami) Pair(context.Context, *pb.PairRequest) (*pb.PairReply, error) {
	return &pb.PairReply{Paired: true}, nil
}

func (whoami) Get(ctx context.Context, _ *pb.KeyRequest) (*pb.KeyReply, error) {
	c, ok := service.CallerFrom(ctx)
	if !ok {
		return nil, status.Error(codes.Internal, "no caller")
	}
	return &pb.KeyReply{Error: c.App}, nil
}

// TestTLSRefusals: with the API on TLS, a client without a certificate,
// with a certificate of another CA, or with a party's certificate (no
// kord-app URI) gets nowhere; an application's certificate is its name.
func TestTLSRefusals(t *testing.T) {
	dir, other := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	if err := peertls.InitApps(dir, time.Hour, []string{"alice", "operator"}); err != nil {
		t.Fatal(err)
	}
	if err := peertls.InitApps(other, time.Hour, []string{"alice"}); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := peertls.PartyFiles(dir, 0)
	serveStatus(t, Config{Listen: l.Addr().String(), TLSCert: f.Cert, TLSKey: f.Key, CA: f.CA}, l)
	call := func(creds credentials.TransportCredentials) (string, error) {
		cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := pb.NewKeySourceClient(cc).Get(ctx, &pb.KeyRequest{})
		if err != nil {
			return "", err
		}
		return r.Error, nil
	}
	appCreds := func(f peertls.Files) credentials.TransportCredentials {
		c, err := peertls.AppClientConfig(f, peertls.PartyName(0))
		if err != nil {
			t.Fatal(err)
		}
		return credentials.NewTLS(c)
	}
	if name, err := call(appCreds(peertls.AppFiles(dir, "alice"))); err != nil || name != "alice" {
		t.Fatalf("alice: %q %v", name, err)
	}
	// No client certificate.
	noCert, _ := peertls.AppClientConfig(peertls.AppFiles(dir, "alice"), peertls.PartyName(0))
	noCert.Certificates = nil
	if _, err := call(credentials.NewTLS(noCert)); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	// Another CA's alice (trusting this CA for the server).
	oc := peertls.AppFiles(other, "alice")
	oc.CA = f.CA
	if _, err := call(appCreds(oc)); err == nil {
		t.Fatal("an application certificate of another CA was served")
	}
	// Party 1's certificate: of this CA, but no kord-app identity.
	if _, err := call(appCreds(peertls.PartyFiles(dir, 1))); err == nil {
		t.Fatal("a party's certificate was served as an application")
	}
	if _, err := call(insecure.NewCredentials()); err == nil {
		t.Fatal("a plaintext client was served")
	}
}

// TestUnixUIDs: on a Unix socket the caller's uid is its identity; a uid
// not in --app-uid is refused, and only the operator gets Status.
func TestUnixUIDs(t *testing.T) {
	if !socket.PeerCredSupported {
		t.Skip("no peer credentials on this OS")
	}
	self := os.Getuid()
	call := func(uids map[int]string, method string) (string, error) {
		path := filepath.Join(t.TempDir(), "app.sock")
		l, err := socket.Listen(path)
		if err != nil {
			t.Fatal(err)
		}
		serveStatus(t, Config{Listen: "unix://" + path, UIDs: uids}, l)
		cc, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		switch method {
		case "status":
			_, err := pb.NewKeySourceClient(cc).Status(ctx, &pb.StatusRequest{})
			return "", err
		case "pair":
			_, err := pb.NewKeySourceClient(cc).Pair(ctx, &pb.PairRequest{})
			return "", err
		}
		r, err := pb.NewKeySourceClient(cc).Get(ctx, &pb.KeyRequest{})
		if err != nil {
			return "", err
		}
		return r.Error, nil
	}
	if name, err := call(map[int]string{self: "alice"}, "get"); err != nil || name != "alice" {
		t.Fatalf("uid %d as alice: %q %v", self, name, err)
	}
	if _, err := call(map[int]string{self + 1: "bob"}, "get"); err == nil {
		t.Fatalf("uid %d not listed, but served", self)
	}
	if _, err := call(map[int]string{self: "alice"}, "pair"); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("alice's Pair: %v, want PermissionDenied", err)
	}
	if _, err := call(map[int]string{self: DefaultOperator}, "status"); err != nil {
		t.Fatalf("the operator's Status: %v", err)
	}
}

// FuzzParseUIDs: --app-uid never panics, and what it accepts maps each
// uid to one valid name.
func FuzzParseUIDs(f *testing.F) {
	for _, s := range []string{"a=0", "a=1,b=2", "x", "=,=", "a=1,a=1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseUIDs(s)
		if err != nil {
			return
		}
		for uid, name := range m {
			if uid < 0 || peertls.CheckAppName(name) != nil {
				t.Fatalf("%q: uid %d name %q accepted", s, uid, name)
			}
		}
	})
}
