package socket

import "golang.org/x/sys/unix"

// PeerCredSupported says whether this OS reports a Unix socket peer's uid.
const PeerCredSupported = true

func peerCredFD(fd int) (PeerCred, error) {
	x, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return PeerCred{-1, -1}, err
	}
	return PeerCred{UID: int(x.Uid), PID: -1}, nil
}
