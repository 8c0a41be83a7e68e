package mpspdz

import (
	"bytes"
	"fmt"
	"io"
)

// Header is the 17-byte header of every semi2k Z_2^64 file: a u64 length
// 9, then "Z2^64" and an i32 holding 64, little-endian. semi2k has no MAC,
// so no key section follows.
var Header = [HeaderSize]byte{9, 0, 0, 0, 0, 0, 0, 0, 'Z', '2', '^', '6', '4', 64, 0, 0, 0}

// HeaderSize is the size of Header.
const HeaderSize = 17

// WriteHeader writes Header to w.
func WriteHeader(w io.Writer) error {
	_, err := w.Write(Header[:])
	return err
}

// checkHeader reports whether b starts with Header, naming what differs.
func checkHeader(b []byte) error {
	if len(b) < HeaderSize {
		return fmt.Errorf("header: %d bytes, want %d", len(b), HeaderSize)
	}
	if !bytes.Equal(b[:8], Header[:8]) {
		return fmt.Errorf("header: length field % x, want % x (9)", b[:8], Header[:8])
	}
	if !bytes.Equal(b[8:13], Header[8:13]) {
		return fmt.Errorf("header: domain %q, want %q", b[8:13], Header[8:13])
	}
	if !bytes.Equal(b[13:17], Header[13:17]) {
		return fmt.Errorf("header: ring bits % x, want % x (64)", b[13:17], Header[13:17])
	}
	return nil
}
