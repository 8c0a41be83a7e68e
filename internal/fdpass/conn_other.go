//go:build !linux

package fdpass

import (
	"errors"
	"net"
)

// Supported says whether fds can be passed on this platform.
const Supported = false

// Conn is a connection that passes fds; never made here.
type Conn struct{ net.Conn }

// Server returns c: no fds are passed here.
func Server(c net.Conn) net.Conn { return c }

// Client returns c: no fds are passed here.
func Client(c net.Conn, _ *Inbox) net.Conn { return c }

// Send refuses: no fds are passed here.
func (c *Conn) Send(fd int) error { return errors.New("fdpass: not supported on this platform") }

// ID names a file by its device and inode numbers.
type ID struct{ Dev, Inode uint64 }

// IDOf fails: no fds are passed here.
func IDOf(int) (ID, error) { return ID{}, errors.New("fdpass: not supported on this platform") }

// Inbox holds nothing here.
type Inbox struct{}

// NewInbox returns nil: no fds are passed here.
func NewInbox() *Inbox { return nil }

// Take finds nothing.
func (*Inbox) Take(ID) (int, bool) { return -1, false }

// Close does nothing.
func (*Inbox) Close() {}

// Len is 0.
func (*Inbox) Len() int { return 0 }
