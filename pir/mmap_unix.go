//go:build unix

package pir

import (
	"os"
	"syscall"
)

// mapRecords maps the records region of f read-only. The header is 64
// bytes, so the mapping starts at offset 0 and the records at byte 64.
func mapRecords(f *os.File, size int64) ([]byte, func() error, error) {
	m, err := syscall.Mmap(int(f.Fd()), 0, int(HeaderSize+size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return m[HeaderSize:], func() error { return syscall.Munmap(m) }, nil
}
