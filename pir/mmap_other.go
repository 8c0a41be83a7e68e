//go:build !unix

package pir

import (
	"io"
	"os"
)

// mapRecords reads the records region of f into memory.
func mapRecords(f *os.File, size int64) ([]byte, func() error, error) {
	b := make([]byte, size)
	if _, err := f.ReadAt(b, HeaderSize); err != nil && err != io.EOF {
		return nil, nil, err
	}
	return b, nil, nil
}
