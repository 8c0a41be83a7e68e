package mpspdz

import (
	"encoding/binary"
	"fmt"
	"os"
)

// Parse reads one file's bytes strictly: exactly Header, then a whole
// number of tuples of kind k (k.Words() little-endian u64 shares each).
// It returns the shares, tuple after tuple.
func Parse(b []byte, k Kind) ([]uint64, error) {
	if !k.valid() {
		return nil, fmt.Errorf("mpspdz: unknown kind %+v", k)
	}
	if err := checkHeader(b); err != nil {
		return nil, err
	}
	body := b[HeaderSize:]
	tuple := 8 * k.Words()
	if len(body)%tuple != 0 {
		return nil, fmt.Errorf("body: %d bytes is not a whole number of %d-byte %s tuples (%d over)", len(body), tuple, k, len(body)%tuple)
	}
	out := make([]uint64, len(body)/8)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(body[8*i:])
	}
	return out, nil
}

// ReadFile reads player p's file of kind k under dir (Path) strictly
// (Parse); errors name the file.
func ReadFile(dir string, k Kind, p int) ([]uint64, error) {
	path := Path(dir, k, p)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := Parse(b, k)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
