//go:build unix

package socket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serveAccess serves fakeDev on a fresh socket (group gid if ≥ 0) with
// the given access rule and returns its path.
func serveAccess(t *testing.T, a Access, gid int) string {
	t.Helper()
	dir := t.TempDir()
	// Another uid must reach the socket in the tests that change uid.
	os.Chmod(filepath.Dir(dir), 0o711)
	os.Chmod(dir, 0o711)
	path := filepath.Join(dir, "m.sock")
	listen := Listen
	if gid >= 0 {
		listen = func(p string) (net.Listener, error) { return ListenGroup(p, gid) }
	}
	l, err := listen(path)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil {
		t.Fatal(err)
	} else if want := os.FileMode(0o600); gid >= 0 && (st.Mode().Perm() != 0o660 || int(st.Sys().(*syscall.Stat_t).Gid) != gid) || gid < 0 && st.Mode().Perm() != want {
		t.Fatalf("socket mode %v group %d (asked for group %d)", st.Mode().Perm(), st.Sys().(*syscall.Stat_t).Gid, gid)
	}
	go NewServer(fakeDev{}, ServerOptions{Access: a}).Serve(l)
	t.Cleanup(func() { l.Close() })
	return path
}

func pollOnce(path string) error {
	c := Dial(path, 5*time.Second)
	defer c.Close()
	_, err := c.Poll(context.Background(), nil)
	return err
}

// TestPeerSameUID: a peer under the module's own uid is refused, with an
// error that names the fix, unless the server admits the same uid; and a
// zero Access refuses it too.
func TestPeerSameUID(t *testing.T) {
	if !PeerCredSupported {
		t.Skip("this OS reports no peer credentials")
	}
	for _, a := range []Access{{}, {UIDs: []int{os.Geteuid() + 1}}} {
		err := pollOnce(serveAccess(t, a, -1))
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "--allow-same-uid") || !strings.Contains(err.Error(), "--party-uid") {
			t.Fatalf("%+v: same-uid peer: %v; want ErrRefused naming --party-uid and --allow-same-uid", a, err)
		}
	}
	if err := pollOnce(serveAccess(t, Access{SameUID: true}, -1)); err != nil {
		t.Fatalf("SameUID: %v", err)
	}
}

// TestPeerRefusedRaw: a refused peer that sends nothing still reads the
// refusal, and the server closes the connection.
func TestPeerRefusedRaw(t *testing.T) {
	if !PeerCredSupported {
		t.Skip("this OS reports no peer credentials")
	}
	path := serveAccess(t, Access{}, -1)
	c := Dial(path, 0)
	cn, err := c.get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	cn.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := readMsgInto(cn, nil)
	if err != nil || !strings.Contains(string(b), "module's own uid") {
		t.Fatalf("refusal: %q %v", b, err)
	}
	cn.Conn.(interface{ CloseWrite() error }).CloseWrite()
	if n, err := io.Copy(io.Discard, cn); n != 0 || err != nil {
		t.Fatalf("after the refusal: %d more bytes, %v; want EOF", n, err)
	}
}

func TestAccessCheck(t *testing.T) {
	const self = 1000
	for _, c := range []struct {
		a     Access
		cred  PeerCred
		err   error
		admit bool
	}{
		{Access{}, PeerCred{self, 1}, nil, false},
		{Access{SameUID: true}, PeerCred{self, 1}, nil, true},
		{Access{UIDs: []int{2000}}, PeerCred{2000, 1}, nil, true},
		{Access{UIDs: []int{2000}}, PeerCred{2001, 1}, nil, false},
		{Access{SameUID: true}, PeerCred{0, 1}, nil, false}, // root is not special
		{Access{UIDs: []int{0}}, PeerCred{0, 1}, nil, true},
		{Access{SameUID: true, UIDs: []int{2000}}, PeerCred{-1, -1}, errNoPeerCred, false},
		{Access{Unverified: true}, PeerCred{-1, -1}, errNoPeerCred, true},
		{Access{Unverified: true}, PeerCred{-1, -1}, errors.New("getsockopt failed"), false},
	} {
		if got := c.a.check(c.cred, c.err, self) == ""; got != c.admit {
			t.Errorf("%+v %+v %v: admitted %v, want %v", c.a, c.cred, c.err, got, c.admit)
		}
	}
}

// TestPeerOtherUID (root only): a child process under another uid, in
// the socket's group, is refused unless its uid is listed.
func TestPeerOtherUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot start a peer under another uid here; TestAccessCheck covers the rule")
	}
	if !PeerCredSupported {
		t.Skip("this OS reports no peer credentials")
	}
	const uid, gid = 4242, 4242
	// The child runs a copy of this test binary that it can read.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "peer.test")
	os.Chmod(filepath.Dir(filepath.Dir(bin)), 0o711)
	os.Chmod(filepath.Dir(bin), 0o711)
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(path string) string {
		cmd := exec.Command(bin, "-test.run=^TestPeerHelper$")
		cmd.Env = append(os.Environ(), "KORD_PEER_SOCKET="+path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("peer process: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := run(serveAccess(t, Access{SameUID: true}, gid)); !strings.Contains(out, "REFUSED") || !strings.Contains(out, "--party-uid 4242") {
		t.Fatalf("uid %d not listed: %s", uid, out)
	}
	if out := run(serveAccess(t, Access{UIDs: []int{uid}}, gid)); !strings.Contains(out, "ADMITTED") {
		t.Fatalf("uid %d listed: %s", uid, out)
	}
	// Without the group the socket (0600) keeps the other uid out at
	// connect.
	if out := run(serveAccess(t, Access{UIDs: []int{uid}}, -1)); !strings.Contains(out, "UNREACHABLE") {
		t.Fatalf("0600 socket: %s", out)
	}
}

// TestPeerHelper is the peer process of TestPeerOtherUID.
func TestPeerHelper(t *testing.T) {
	path := os.Getenv("KORD_PEER_SOCKET")
	if path == "" {
		t.Skip("helper process only")
	}
	switch err := pollOnce(path); {
	case err == nil:
		fmt.Println("ADMITTED")
	case errors.Is(err, ErrRefused):
		fmt.Println("REFUSED:", err)
	case errors.Is(err, ErrTransport):
		fmt.Println("UNREACHABLE:", err)
	default:
		fmt.Println("OTHER:", err)
	}
}
