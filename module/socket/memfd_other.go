//go:build !linux

package socket

import (
	"errors"
	"net"
)

// SlabFDSupported says whether slabs can cross the socket as memfds.
const SlabFDSupported = false

var errNoMemfd = errors.New("socket: slab memfds need Linux")

func sealedMemfd([]byte) (int, error)    { return -1, errNoMemfd }
func mapSealed(int, int) ([]byte, error) { return nil, errNoMemfd }

// CheckSealed refuses: no memfds here.
func CheckSealed(int, int) error { return errNoMemfd }

func unmapSlab([]byte)       {}
func closeFD(int)            {}
func dupFD(int) (int, error) { return -1, errNoMemfd }

func writeWithFD(net.Conn, []byte, int) error { return errNoMemfd }

func readFullFDs(c net.Conn, b []byte, fds []int, _ int) ([]int, error) {
	_, err := readFull(c, b)
	return fds, err
}
