package mpspdz

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Writer writes one player's file of one kind: Header, then tuples.
type Writer struct {
	f      *os.File
	w      *bufio.Writer
	kind   Kind
	tuples int
	path   string
	buf    [8]byte
}

// Create starts player p's file of kind k under the Player-Data directory
// dir (creating dir/2-DR-64). An existing file is an error unless force,
// which truncates it.
func Create(dir string, k Kind, p int, force bool) (*Writer, error) {
	if !k.valid() {
		return nil, fmt.Errorf("mpspdz: unknown kind %+v", k)
	}
	if p < 0 || p >= Players {
		return nil, fmt.Errorf("mpspdz: player %d, want 0 or 1", p)
	}
	path := Path(dir, k, p)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	flag := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flag = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%s exists (give --force to overwrite it)", path)
	}
	if err != nil {
		return nil, err
	}
	w := &Writer{f: f, w: bufio.NewWriterSize(f, 1<<16), kind: k, path: path}
	if err := WriteHeader(w.w); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Write appends whole tuples: len(shares) must be a multiple of
// Kind.Words().
func (w *Writer) Write(shares []uint64) error {
	if len(shares)%w.kind.Words() != 0 {
		return fmt.Errorf("mpspdz: %d shares is not a whole number of %s tuples", len(shares), w.kind)
	}
	for _, v := range shares {
		binary.LittleEndian.PutUint64(w.buf[:], v)
		if _, err := w.w.Write(w.buf[:]); err != nil {
			return fmt.Errorf("%s: %w", w.path, err)
		}
	}
	w.tuples += len(shares) / w.kind.Words()
	return nil
}

// Tuples is the number of tuples written so far.
func (w *Writer) Tuples() int { return w.tuples }

// Path is the file's path.
func (w *Writer) Path() string { return w.path }

// Close flushes and closes the file.
func (w *Writer) Close() error {
	err := w.w.Flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", w.path, err)
	}
	return nil
}
