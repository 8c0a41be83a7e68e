package socket

import "golang.org/x/sys/unix"

// PeerCredSupported says whether this OS reports a Unix socket peer's uid.
const PeerCredSupported = true

func peerCredFD(fd int) (PeerCred, error) {
	u, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return PeerCred{-1, -1}, err
	}
	return PeerCred{UID: int(u.Uid), PID: int(u.Pid)}, nil
}
