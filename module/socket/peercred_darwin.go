package socket

import "golang.org/x/sys/unix"

// PeerCredSupported says whether this OS reports a Unix socket peer's uid.
const PeerCredSupported = true

func peerCredFD(fd int) (PeerCred, error) {
	x, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return PeerCred{-1, -1}, err
	}
	pid, err := unix.GetsockoptInt(fd, unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	if err != nil {
		pid = -1
	}
	return PeerCred{UID: int(x.Uid), PID: pid}, nil
}
