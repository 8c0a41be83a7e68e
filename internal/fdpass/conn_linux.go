package fdpass

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Supported says whether fds can be passed on this platform.
const Supported = true

// maxPerWrite bounds the fds sent with one byte (and so received with one
// read: the Conn's control buffer holds that many).
const maxPerWrite = 32

// Conn is a Unix connection that passes fds beside its bytes.
type Conn struct {
	*net.UnixConn
	mu     sync.Mutex
	out    []int // fds to send with the next bytes written
	closed bool
	in     *Inbox // the client side's received fds; nil on a server
	oob    []byte
}

// Server wraps a server's accepted connection so that Send can pass fds
// on it; c is returned as it is when it is not a Unix connection.
func Server(c net.Conn) net.Conn {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return c
	}
	return &Conn{UnixConn: uc}
}

// Client wraps a client's connection so that the fds passed with the
// bytes it reads go into in; c is returned as it is when it is not a
// Unix connection.
func Client(c net.Conn, in *Inbox) net.Conn {
	uc, ok := c.(*net.UnixConn)
	if !ok || in == nil {
		return c
	}
	return &Conn{UnixConn: uc, in: in, oob: make([]byte, unix.CmsgSpace(4*maxPerWrite))}
}

// Send queues fd to go with the next bytes written; the Conn takes it
// over (it is closed once sent, or when the connection closes first).
func (c *Conn) Send(fd int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		unix.Close(fd)
		return net.ErrClosed
	}
	c.out = append(c.out, fd)
	return nil
}

// Write writes b, passing the queued fds with its first bytes (up to
// maxPerWrite with each byte).
func (c *Conn) Write(b []byte) (int, error) {
	c.mu.Lock()
	fds := c.out
	c.out = nil
	c.mu.Unlock()
	n := 0
	for len(fds) > 0 && n < len(b) {
		k := min(len(fds), maxPerWrite)
		w, _, err := c.UnixConn.WriteMsgUnix(b[n:n+1], unix.UnixRights(fds[:k]...), nil)
		closeAll(fds[:k]) // the kernel holds its own references once sent
		fds = fds[k:]
		n += w
		if err != nil {
			closeAll(fds)
			return n, err
		}
	}
	if len(fds) > 0 {
		// b was too short to carry them all: they go with the next write.
		c.mu.Lock()
		c.out = append(fds, c.out...)
		c.mu.Unlock()
	}
	if n == len(b) {
		return n, nil
	}
	w, err := c.UnixConn.Write(b[n:])
	return n + w, err
}

// Read reads into b, keeping the fds that come with the bytes in the
// client's Inbox.
func (c *Conn) Read(b []byte) (int, error) {
	if c.in == nil {
		return c.UnixConn.Read(b)
	}
	n, oobn, flags, _, err := c.UnixConn.ReadMsgUnix(b, c.oob)
	if oobn > 0 {
		c.in.addRights(c.oob[:oobn])
	}
	if flags&unix.MSG_CTRUNC != 0 {
		slog.Warn("fdpass: fds passed on the connection were cut off (more than one read's control buffer holds)", "max", maxPerWrite)
	}
	return n, err
}

// Close closes the connection and the fds still queued on it.
func (c *Conn) Close() error {
	c.mu.Lock()
	c.closed = true
	fds := c.out
	c.out = nil
	c.mu.Unlock()
	closeAll(fds)
	return c.UnixConn.Close()
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// ID names a file by its device and inode numbers.
type ID struct{ Dev, Inode uint64 }

// IDOf returns the ID of fd's file.
func IDOf(fd int) (ID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return ID{}, fmt.Errorf("fdpass: fstat: %w", err)
	}
	return ID{Dev: uint64(st.Dev), Inode: st.Ino}, nil
}

// maxInbox bounds the fds an Inbox holds untaken: past it, the oldest is
// closed (a party sends an fd only with the message that names it, so an
// application that reads its messages never holds more than a few).
const maxInbox = 256

// Inbox holds the fds a client's connections received, until taken.
type Inbox struct {
	mu     sync.Mutex
	fds    map[ID]int
	order  []ID
	closed bool
}

// NewInbox returns an empty Inbox.
func NewInbox() *Inbox { return &Inbox{fds: map[ID]int{}} }

// Take returns the fd received for id, which the caller then owns.
func (in *Inbox) Take(id ID) (int, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	fd, ok := in.fds[id]
	if ok {
		delete(in.fds, id)
	}
	return fd, ok
}

// Close closes every fd not taken; later ones are closed as they come.
func (in *Inbox) Close() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.closed = true
	for id, fd := range in.fds {
		unix.Close(fd)
		delete(in.fds, id)
	}
	in.order = nil
}

// Len is how many fds wait to be taken.
func (in *Inbox) Len() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.fds)
}

func (in *Inbox) addRights(oob []byte) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return
	}
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			in.add(fd)
		}
	}
}

func (in *Inbox) add(fd int) {
	unix.CloseOnExec(fd)
	id, err := IDOf(fd)
	in.mu.Lock()
	defer in.mu.Unlock()
	if err != nil || in.closed {
		unix.Close(fd)
		return
	}
	if old, ok := in.fds[id]; ok {
		unix.Close(old) // a file named twice: the later fd stands
	}
	in.fds[id] = fd
	in.order = append(in.order, id)
	for len(in.fds) > maxInbox && len(in.order) > 0 {
		oldest := in.order[0]
		in.order = in.order[1:]
		if fd, ok := in.fds[oldest]; ok {
			unix.Close(fd)
			delete(in.fds, oldest)
		}
	}
	if len(in.order) > 4*maxInbox {
		in.order = compact(in.order, in.fds)
	}
}

// compact drops from order the IDs already taken.
func compact(order []ID, fds map[ID]int) []ID {
	out := order[:0]
	for _, id := range order {
		if _, ok := fds[id]; ok {
			out = append(out, id)
		}
	}
	return out
}

// SocketPair returns two connected Unix stream connections, whose fds
// the caller then wraps with Server and Client (tests of fd passing).
func SocketPair() (net.Conn, net.Conn, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("fdpass: socketpair: %w", err)
	}
	var out [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "fdpass-pair")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			if i == 1 {
				out[0].Close()
			} else {
				unix.Close(fds[1])
			}
			return nil, nil, fmt.Errorf("fdpass: socketpair: %w", err)
		}
		out[i] = c
	}
	return out[0], out[1], nil
}
