package socket

import (
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// SlabFDSupported says whether slabs can cross the socket as memfds.
const SlabFDSupported = true

// allSeals are the seals a slab's memfd carries when handed over: nobody
// (the module included) can write, grow or shrink it, or lift the seals.
const allSeals = unix.F_SEAL_WRITE | unix.F_SEAL_GROW | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL

// sealedMemfd returns a fresh memfd holding keys, sealed with allSeals.
// keys are copied once, by write(2): through a writable mapping instead,
// each fresh page cost a fault, 3.7 ms for a 600 KiB slab on the 2-core
// VM against 0.2 ms for write (BenchmarkSealedMemfd, BENCHMARKS.md).
func sealedMemfd(keys []byte) (int, error) {
	if len(keys) == 0 {
		return -1, errors.New("socket: memfd: no keys")
	}
	fd, err := unix.MemfdCreate("kord-slab", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, fmt.Errorf("socket: memfd_create: %w", err)
	}
	fail := func(what string, err error) (int, error) {
		unix.Close(fd)
		return -1, fmt.Errorf("socket: memfd %s: %w", what, err)
	}
	for off := 0; off < len(keys); {
		n, err := unix.Pwrite(fd, keys[off:], int64(off))
		if err != nil {
			return fail("write", err)
		}
		if n == 0 {
			return fail("write", errors.New("wrote nothing"))
		}
		off += n
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, allSeals); err != nil {
		return fail("seal", err)
	}
	return fd, nil
}

// CheckSealed checks that fd is a memfd carrying every seal of allSeals
// (else whoever made it could still change the keys after they were
// delivered) and holding exactly size bytes.
func CheckSealed(fd, size int) error {
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return fmt.Errorf("%w: slab fd: not a sealable memfd: %v", ErrTransport, err)
	}
	if seals&allSeals != allSeals {
		return fmt.Errorf("%w: slab fd: seals %#x, want all of %#x (write, grow, shrink, seal): refused", ErrTransport, seals, allSeals)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%w: slab fd: %v", ErrTransport, err)
	}
	if size <= 0 || st.Size != int64(size) {
		return fmt.Errorf("%w: slab fd: %d bytes, want %d", ErrTransport, st.Size, size)
	}
	return nil
}

// mapSealed maps a slab's memfd read-only after CheckSealed. fd stays
// the caller's. The pages are not populated up front: a party that hands
// the memfd on to its application (TakeSlabFD) never touches the keys,
// and populating and tearing down their page tables was a quarter of its
// CPU in bench resnet18-keys; one that reads them takes a minor fault per
// fault-around window instead.
func mapSealed(fd, size int) ([]byte, error) {
	if err := CheckSealed(fd, size); err != nil {
		return nil, err
	}
	m, err := unix.Mmap(fd, 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("%w: slab fd: mmap: %v", ErrTransport, err)
	}
	addMapped(m, -1)
	return m, nil
}

// unmapSlab undoes mapSealed, closing the slab's fd if it was kept
// (keepFD) and not handed on (TakeSlabFD).
func unmapSlab(m []byte) {
	if fd := dropMapped(m); fd >= 0 {
		closeFD(fd)
	}
	_ = unix.Munmap(m)
}

func closeFD(fd int) { _ = unix.Close(fd) }

func dupFD(fd int) (int, error) { return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0) }

// writeWithFD writes b, passing fd with its first byte (SCM_RIGHTS).
func writeWithFD(c net.Conn, b []byte, fd int) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return errors.New("socket: passing a slab fd needs a Unix connection")
	}
	n, _, err := uc.WriteMsgUnix(b, unix.UnixRights(fd), nil)
	if err != nil {
		return err
	}
	if n < len(b) {
		_, err = c.Write(b[n:])
	}
	return err
}

// readFullFDs is io.ReadFull that also collects the fds passed with the
// bytes read (at most max of them; any more are closed).
func readFullFDs(c net.Conn, b []byte, fds []int, max int) ([]int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		_, err := readFull(c, b)
		return fds, err
	}
	oob := make([]byte, unix.CmsgSpace(4*max))
	for got := 0; got < len(b); {
		n, oobn, _, _, err := uc.ReadMsgUnix(b[got:], oob)
		if oobn > 0 {
			fds = appendRights(fds, oob[:oobn], max)
		}
		if err != nil {
			return fds, err
		}
		if n == 0 {
			return fds, errors.New("socket: unexpected EOF")
		}
		got += n
	}
	return fds, nil
}

func appendRights(fds []int, oob []byte, max int) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return fds
	}
	for _, m := range msgs {
		rs, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range rs {
			if len(fds) < max {
				fds = append(fds, fd)
			} else {
				unix.Close(fd)
			}
		}
	}
	return fds
}
