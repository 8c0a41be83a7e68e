// Package appauth authenticates the callers of a party's application API
// (KeySource) and tells the party who each one is (service.Caller).
//
// On TCP the API runs TLS 1.3 and every application presents a client
// certificate chaining to --app-ca with one URI SAN kord-app:NAME: NAME
// is its identity. On a Unix socket the kernel reports the caller's uid
// (SO_PEERCRED), which --app-uid maps to a name; an unlisted uid is
// refused. Plaintext (no identity, every caller the anonymous application
// "" and the operator) is allowed only when asked for (--app-plaintext),
// or on loopback TCP when no TLS flag is given (local development). The
// application with the --operator name may also call Pair and read the
// full Status; any other gets a Status limited to the API's features and
// the site's health (StatusReply.limited).
package appauth

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/kord-fss/kord/internal/fdpass"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/kord-fss/kord/internal/peertls"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/service"
)

// DefaultOperator is --operator's default.
const DefaultOperator = "operator"

// Config is the application API's authentication, from kord party's
// flags.
type Config struct {
	// Listen is the API's address: host:port, or unix:///path.
	Listen string
	// TLSCert, TLSKey: the party's certificate and key (--app-tls-cert,
	// --app-tls-key); CA: the CA applications' certificates chain to
	// (--app-ca).
	TLSCert, TLSKey, CA string
	// Plaintext (--app-plaintext): no TLS and no identities.
	Plaintext bool
	// UIDs (--app-uid NAME=UID,...): on a Unix socket, the uids that may
	// connect and their application names.
	UIDs map[int]string
	// Operator (--operator) is the identity that may call Pair and
	// Status.
	Operator string
}

// Mode is how the API authenticates.
type Mode string

// The modes.
const (
	ModeTLS       Mode = "tls"       // client certificates
	ModeUID       Mode = "unix-uid"  // Unix socket peer credentials
	ModePlaintext Mode = "plaintext" // none
)

// ParseUIDs reads --app-uid: NAME=UID pairs separated by commas, UID a
// number or a user name. A uid may be named once.
func ParseUIDs(s string) (map[int]string, error) {
	out := map[int]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		name, u, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("--app-uid %q: want NAME=UID (a uid or user name), comma-separated", part)
		}
		if err := peertls.CheckAppName(name); err != nil {
			return nil, fmt.Errorf("--app-uid %q: %w", part, err)
		}
		uid, err := socket.LookupUser(u)
		if err != nil {
			return nil, fmt.Errorf("--app-uid %q: %w", part, err)
		}
		if prev, dup := out[uid]; dup {
			return nil, fmt.Errorf("--app-uid: uid %d is named twice (%s and %s)", uid, prev, name)
		}
		out[uid] = name
	}
	return out, nil
}

// isUnix reports whether addr names a Unix socket (unix:///path).
func isUnix(addr string) bool { return strings.HasPrefix(addr, "unix://") }

// isLoopback reports whether a host:port address is on loopback only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Check decides the API's mode from c, or says what is wrong (naming the
// flag).
func (c Config) Check() (Mode, error) {
	tlsGiven := c.TLSCert != "" || c.TLSKey != "" || c.CA != ""
	if c.Operator != "" {
		if err := peertls.CheckAppName(c.Operator); err != nil {
			return "", fmt.Errorf("--operator: %w", err)
		}
	}
	switch {
	case c.Plaintext && (tlsGiven || len(c.UIDs) > 0):
		return "", fmt.Errorf("--app-plaintext and --app-tls-cert/--app-tls-key/--app-ca/--app-uid exclude each other: give one or the other")
	case c.Plaintext:
		return ModePlaintext, nil
	case isUnix(c.Listen):
		if tlsGiven {
			return "", fmt.Errorf("--listen %s is a Unix socket: applications are told apart by uid (--app-uid NAME=UID,...), not --app-tls-*", c.Listen)
		}
		if len(c.UIDs) == 0 {
			return "", fmt.Errorf("--listen %s: a Unix socket needs --app-uid NAME=UID,... (which users' applications may connect, and their names), or an explicit --app-plaintext", c.Listen)
		}
		return ModeUID, nil
	case len(c.UIDs) > 0:
		return "", fmt.Errorf("--app-uid is for a Unix socket --listen (unix:///path), not %s", c.Listen)
	case tlsGiven && (c.TLSCert == "" || c.TLSKey == "" || c.CA == ""):
		return "", fmt.Errorf("--app-tls-cert, --app-tls-key and --app-ca go together (all three are needed)")
	case tlsGiven:
		return ModeTLS, nil
	case isLoopback(c.Listen):
		return ModePlaintext, nil // local development: loopback only
	default:
		return "", fmt.Errorf("--listen %s is not loopback: the application API carries α/β shares and key shares, so it needs TLS (--app-tls-cert, --app-tls-key, --app-ca; make them with kord certs --dir D --apps NAME), or an explicit --app-plaintext", c.Listen)
	}
}

// ServerOptions are the gRPC server options that authenticate the API's
// callers as c says: transport credentials and the interceptors that put
// the service.Caller in each call's context and keep Pair and Status to
// the operator. log gets refused connections.
func (c Config) ServerOptions(log *slog.Logger) ([]grpc.ServerOption, Mode, error) {
	mode, err := c.Check()
	if err != nil {
		return nil, "", err
	}
	op := c.Operator
	if op == "" {
		op = DefaultOperator
	}
	a := auth{mode: mode, operator: op}
	var opts []grpc.ServerOption
	switch mode {
	case ModeTLS:
		tc, err := peertls.AppServerConfig(c.TLSCert, c.TLSKey, c.CA)
		if err != nil {
			return nil, "", fmt.Errorf("--app-tls-cert/--app-tls-key/--app-ca: %w", err)
		}
		opts = append(opts, grpc.Creds(logged{credentials.NewTLS(tc), log}))
	case ModeUID:
		opts = append(opts, grpc.Creds(logged{uidCreds{uids: c.UIDs}, log}))
	}
	opts = append(opts, grpc.ChainUnaryInterceptor(a.unary), grpc.ChainStreamInterceptor(a.stream))
	return opts, mode, nil
}

// auth is the interceptors' state.
type auth struct {
	mode     Mode
	operator string
}

// caller is who ctx's connection is; an error is a refusal to send back.
func (a auth) caller(ctx context.Context) (service.Caller, error) {
	if a.mode == ModePlaintext {
		return service.Caller{Operator: true}, nil
	}
	p, ok := peer.FromContext(ctx)
	if !ok || p.AuthInfo == nil {
		return service.Caller{}, status.Error(codes.Unauthenticated, "no authenticated application identity on this connection")
	}
	var name string
	switch ai := p.AuthInfo.(type) {
	case credentials.TLSInfo:
		if len(ai.State.PeerCertificates) == 0 {
			return service.Caller{}, status.Error(codes.Unauthenticated, "no client certificate")
		}
		n, err := peertls.AppName(ai.State.PeerCertificates[0])
		if err != nil {
			return service.Caller{}, status.Error(codes.Unauthenticated, err.Error())
		}
		name = n
	case uidInfo:
		name = ai.name
	default:
		return service.Caller{}, status.Errorf(codes.Unauthenticated, "unknown authentication %q", p.AuthInfo.AuthType())
	}
	return service.Caller{App: name, Operator: name == a.operator}, nil
}

func (a auth) admit(ctx context.Context, method string) (context.Context, service.Caller, error) {
	c, err := a.caller(ctx)
	if err != nil {
		return nil, c, err
	}
	if method == pb.KeySource_Pair_FullMethodName && !c.Operator {
		return nil, c, status.Errorf(codes.PermissionDenied, "Pair is limited to the operator identity (%q, kord party --operator); this caller is application %q", a.operator, c.App)
	}
	return service.WithCaller(ctx, c), c, nil
}

func (a auth) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	ctx, c, err := a.admit(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	r, err := h(ctx, req)
	if info.FullMethod == pb.KeySource_Status_FullMethodName && !c.Operator && err == nil {
		// Status is the operator's: an application learns only what it
		// needs to use the API and check the site's health, nothing of
		// other applications' activity (counters, pending, delivered).
		if st, ok := r.(*pb.StatusReply); ok {
			return &pb.StatusReply{Party: st.Party, Paired: st.Paired, PeerConnected: st.PeerConnected,
				PackedRequests: st.PackedRequests, Limited: true}, nil
		}
	}
	return r, err
}

func (a auth) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	ctx, _, err := a.admit(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	return h(srv, callerStream{ss, ctx})
}

// callerStream is a server stream whose context carries the Caller.
type callerStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s callerStream) Context() context.Context { return s.ctx }

// uidInfo is a Unix-socket caller: its uid and name.
type uidInfo struct {
	credentials.CommonAuthInfo
	uid  int
	name string
	// conn passes fds to the application (fdpass): a slab's keys as
	// the sealed memfd they are in, when the application asks.
	conn *fdpass.Conn
}

func (uidInfo) AuthType() string { return "unix-peercred" }

// FDConn is the caller's connection, which can pass it fds (fdpass.Of).
func (u uidInfo) FDConn() *fdpass.Conn { return u.conn }

// uidCreds admits a Unix socket connection whose peer's uid is in uids
// (the kernel's word: SO_PEERCRED) and names it; it adds no encryption
// (none is needed inside one host's kernel).
type uidCreds struct{ uids map[int]string }

func (c uidCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	cred, err := socket.PeerCredOf(conn)
	if err != nil {
		return nil, nil, fmt.Errorf("appauth: cannot tell the application's uid: %w", err)
	}
	name, ok := c.uids[cred.UID]
	if !ok {
		return nil, nil, fmt.Errorf("appauth: uid %d (pid %d) is not an application of this party: add NAME=%d to --app-uid", cred.UID, cred.PID, cred.UID)
	}
	conn = fdpass.Server(conn)
	fc, _ := conn.(*fdpass.Conn)
	return conn, uidInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}, uid: cred.UID, name: name, conn: fc}, nil
}

func (uidCreds) ClientHandshake(_ context.Context, _ string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, fmt.Errorf("appauth: Unix peer credentials are a server's check")
}

func (uidCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "unix-peercred"}
}

func (c uidCreds) Clone() credentials.TransportCredentials { return c }

func (uidCreds) OverrideServerName(string) error { return nil }

// logged logs the application connections its credentials refuse (gRPC
// drops them silently).
type logged struct {
	credentials.TransportCredentials
	log *slog.Logger
}

func (c logged) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	nc, ai, err := c.TransportCredentials.ServerHandshake(conn)
	if err != nil && c.log != nil {
		c.log.Warn("application API: connection refused", "remote", conn.RemoteAddr().String(), "err", err)
	}
	return nc, ai, err
}

func (c logged) Clone() credentials.TransportCredentials {
	return logged{c.TransportCredentials.Clone(), c.log}
}

// SelfUID is this process's uid, as --app-uid takes it.
func SelfUID() string { return strconv.Itoa(os.Getuid()) }
