package socket

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"slices"
	"strconv"
	"time"

	pb "github.com/kord-fss/kord/proto/modulepb"
)

// ClassRefused is the error class of a connection the module refuses
// (Access): the only message on it, after which the module closes it.
const ClassRefused = 6

// ErrRefused marks a connection the module refused by its peer's uid.
var ErrRefused = errors.New("socket: the module refuses this connection")

// errNoPeerCred: this OS reports no peer credentials on Unix sockets.
var errNoPeerCred = errors.New("this OS reports no peer credentials on Unix sockets")

// PeerCred is who the kernel says is at the other end of a Unix socket
// (when the connection was made). PID is -1 where the OS does not say.
type PeerCred struct{ UID, PID int }

// Access says which peers a module's socket serves, by the uid the kernel
// reports for the connecting process (Linux: SO_PEERCRED; macOS and
// FreeBSD: LOCAL_PEERCRED). The zero value refuses everyone.
type Access struct {
	// UIDs may connect: the user the party daemon runs as. Root is no
	// exception: uid 0 connects only if listed here (or if it is the
	// module's own uid and SameUID is set).
	UIDs []int
	// SameUID admits peers under the module's own uid. A host running as
	// the module's user can read its state file and secret and trace the
	// process, so this gives no protection from the host: it is for demos,
	// CI and tests on one account.
	SameUID bool
	// Unverified admits every peer where the OS reports no peer
	// credentials (PeerCredSupported is false); the socket's mode and
	// group are then the only check.
	Unverified bool
}

// peerCredOf asks the kernel who is at the other end of c.
func peerCredOf(c net.Conn) (PeerCred, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return PeerCred{-1, -1}, fmt.Errorf("not a Unix socket (%T)", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return PeerCred{-1, -1}, err
	}
	cred := PeerCred{-1, -1}
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = peerCredFD(int(fd)) }); err != nil {
		return PeerCred{-1, -1}, err
	}
	return cred, cerr
}

// check returns why a peer is refused, or "" to admit it. self is the
// module's own (effective) uid.
func (a Access) check(cred PeerCred, credErr error, self int) string {
	if credErr != nil {
		if errors.Is(credErr, errNoPeerCred) && a.Unverified {
			return ""
		}
		return fmt.Sprintf("cannot tell who the peer is (%v); the module refuses unverified peers unless started with --allow-unverified-peer", credErr)
	}
	if cred.UID == self {
		if a.SameUID {
			return ""
		}
		return fmt.Sprintf("the peer runs as the module's own uid %d, which can read the module's state and secrets; run the party under another user and start the module with --party-uid UID, or, for a demo or test on one account, with --allow-same-uid", self)
	}
	if slices.Contains(a.UIDs, cred.UID) {
		return ""
	}
	return fmt.Sprintf("the peer's uid %d is not allowed; start the module with --party-uid %d if that is the party's user", cred.UID, cred.UID)
}

// admit checks c's peer against the server's Access; a refused peer gets
// one ClassRefused result (if it reads) and the connection is closed.
func (s *Server) admit(c net.Conn) bool {
	cred, err := peerCredOf(c)
	reason := s.access.check(cred, err, os.Geteuid())
	if reason == "" {
		s.log.Debug("socket: connection", "peer_uid", cred.UID, "peer_pid", cred.PID)
		return true
	}
	s.log.Warn("socket: refused a connection", "peer_uid", cred.UID, "peer_pid", cred.PID, "reason", reason)
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	b, err := appendMsg(nil, &pb.ModuleResponse{Results: []*pb.Result{{ErrorClass: ClassRefused, Error: ErrRefused.Error() + ": " + reason}}})
	if err != nil {
		return false
	}
	if _, err := c.Write(b); err != nil {
		return false
	}
	// Let the peer's first request arrive (unread, it would reset the
	// connection before the peer reads the reply), discarding it.
	if uc, ok := c.(*net.UnixConn); ok {
		uc.CloseWrite()
	}
	var h [4]byte
	if _, err := io.ReadFull(c, h[:]); err == nil {
		io.CopyN(io.Discard, c, int64(min(binary.BigEndian.Uint32(h[:]), MaxMessage)))
	}
	return false
}

// LookupGroup resolves a group name or numeric gid.
func LookupGroup(s string) (int, error) {
	if id, err := strconv.Atoi(s); err == nil && id >= 0 {
		return id, nil
	}
	g, err := user.LookupGroup(s)
	if err != nil {
		return -1, fmt.Errorf("socket: group %q: %w (give a group name or a numeric gid)", s, err)
	}
	return strconv.Atoi(g.Gid)
}

// LookupUser resolves a user name or numeric uid.
func LookupUser(s string) (int, error) {
	if id, err := strconv.Atoi(s); err == nil && id >= 0 {
		return id, nil
	}
	u, err := user.Lookup(s)
	if err != nil {
		return -1, fmt.Errorf("socket: user %q: %w (give a user name or a numeric uid)", s, err)
	}
	return strconv.Atoi(u.Uid)
}

// PeerCredOf asks the kernel who is at the other end of the Unix socket
// connection c (a party checks its applications' uids with it).
func PeerCredOf(c net.Conn) (PeerCred, error) { return peerCredOf(c) }
