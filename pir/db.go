// Package pir is kord's two-server private information retrieval: each of
// two non-colluding servers holds the same database of fixed-size records;
// a client that wants record i generates a type-0x03 XOR DPF key pair for
// the point i (fss.GenXor), sends one key to each server, and XORs the two
// answers. Each server returns the XOR of the records its share of the
// point function selects, and learns nothing about i.
//
// The package holds the database file format (this file), the batched
// answer engine (engine.go), the wire protocol (wire.go), the HTTP server
// (server.go) and the client (client.go). docs/pir.md describes all of them.
package pir

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
)

// Limits of the database format.
const (
	MinRecordSize = 16
	MaxRecordSize = 4096
	MaxRecords    = 1 << 24
	HeaderSize    = 64
)

// fileMagic opens every database file.
var fileMagic = [8]byte{'K', 'O', 'R', 'D', 'P', 'I', 'R', '1'}

// hashLabel domain-separates the content hash.
const hashLabel = "kord/v1/pir/db"

// Errors of the database format; wrapped with details, test with errors.Is.
var (
	ErrHeader     = errors.New("pir: bad database header")
	ErrRecordSize = errors.New("pir: record size outside 16..4096 bytes")
	ErrCount      = errors.New("pir: record count outside 1..2^24")
	ErrFileLength = errors.New("pir: database file length does not match its header")
	ErrHash       = errors.New("pir: database content does not match its hash")
)

// Header describes a database: its record size, record count and content
// hash. It is the first 64 bytes of a database file.
type Header struct {
	RecordSize int
	Count      int
	Hash       [32]byte // SHA-256 of label ‖ S ‖ N ‖ records, see docs/pir.md
}

// DomainBits returns ℓ, the DPF input width that covers Count records:
// the bit length of Count-1, at least 1.
func (h Header) DomainBits() int { return DomainBits(h.Count) }

// DomainBits returns the DPF input width for n records (n ≥ 1).
func DomainBits(n int) int {
	if n <= 2 {
		return 1
	}
	return bits.Len64(uint64(n - 1))
}

// HashHex is the content hash in hex.
func (h Header) HashHex() string { return hex.EncodeToString(h.Hash[:]) }

// Size returns the size in bytes of the records region.
func (h Header) Size() int64 { return int64(h.RecordSize) * int64(h.Count) }

func (h Header) validate() error {
	if h.RecordSize < MinRecordSize || h.RecordSize > MaxRecordSize {
		return fmt.Errorf("%w: %d", ErrRecordSize, h.RecordSize)
	}
	if h.Count < 1 || h.Count > MaxRecords {
		return fmt.Errorf("%w: %d", ErrCount, h.Count)
	}
	return nil
}

// MarshalBinary encodes the 64-byte header.
func (h Header) MarshalBinary() ([]byte, error) {
	if err := h.validate(); err != nil {
		return nil, err
	}
	b := make([]byte, HeaderSize)
	copy(b, fileMagic[:])
	binary.LittleEndian.PutUint32(b[8:], uint32(h.RecordSize))
	binary.LittleEndian.PutUint64(b[16:], uint64(h.Count))
	copy(b[24:56], h.Hash[:])
	return b, nil
}

// ParseHeader decodes and validates a 64-byte header strictly.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes is shorter than the 64-byte header", ErrHeader, len(b))
	}
	if !bytes.Equal(b[:8], fileMagic[:]) {
		return Header{}, fmt.Errorf("%w: magic is %q, not %q", ErrHeader, b[:8], fileMagic[:])
	}
	if binary.LittleEndian.Uint32(b[12:]) != 0 || binary.LittleEndian.Uint64(b[56:]) != 0 {
		return Header{}, fmt.Errorf("%w: reserved bytes are not zero", ErrHeader)
	}
	s := binary.LittleEndian.Uint32(b[8:])
	n := binary.LittleEndian.Uint64(b[16:])
	if s < MinRecordSize || s > MaxRecordSize {
		return Header{}, fmt.Errorf("%w: %d", ErrRecordSize, s)
	}
	if n < 1 || n > MaxRecords {
		return Header{}, fmt.Errorf("%w: %d", ErrCount, n)
	}
	h := Header{RecordSize: int(s), Count: int(n)}
	copy(h.Hash[:], b[24:56])
	return h, nil
}

// ContentHash computes the content hash of count records of size s.
func ContentHash(s, count int, records []byte) [32]byte {
	h := sha256.New()
	var pre [12]byte
	binary.LittleEndian.PutUint32(pre[:4], uint32(s))
	binary.LittleEndian.PutUint64(pre[4:], uint64(count))
	h.Write([]byte(hashLabel))
	h.Write(pre[:])
	h.Write(records)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// DB is a database held in memory (or mapped from its file).
type DB struct {
	Header
	data  []byte // Count·RecordSize bytes of records
	unmap func() error
}

// NewDB wraps records (len = count·recordSize, not copied) as a database
// and computes its hash.
func NewDB(recordSize int, records []byte) (*DB, error) {
	if recordSize < MinRecordSize || recordSize > MaxRecordSize {
		return nil, fmt.Errorf("%w: %d", ErrRecordSize, recordSize)
	}
	if len(records)%recordSize != 0 {
		return nil, fmt.Errorf("pir: %d bytes of records is not a multiple of the record size %d", len(records), recordSize)
	}
	h := Header{RecordSize: recordSize, Count: len(records) / recordSize}
	if err := h.validate(); err != nil {
		return nil, err
	}
	h.Hash = ContentHash(h.RecordSize, h.Count, records)
	return &DB{Header: h, data: records}, nil
}

// Record returns record i (not a copy).
func (db *DB) Record(i int) []byte {
	return db.data[i*db.RecordSize : (i+1)*db.RecordSize]
}

// Records returns the whole records region (not a copy).
func (db *DB) Records() []byte { return db.data }

// Close releases a mapped file.
func (db *DB) Close() error {
	if db.unmap != nil {
		err := db.unmap()
		db.unmap, db.data = nil, nil
		return err
	}
	return nil
}

// WriteTo writes the database in file format: header, then records.
func (db *DB) WriteTo(w io.Writer) (int64, error) {
	hb, err := db.Header.MarshalBinary()
	if err != nil {
		return 0, err
	}
	n, err := w.Write(hb)
	if err != nil {
		return int64(n), err
	}
	m, err := w.Write(db.data)
	return int64(n + m), err
}

// WriteFile writes the database to path (created or truncated).
func (db *DB) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := db.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("pir: writing %s: %w", path, err)
	}
	return f.Close()
}

// Open maps (or reads) a database file and, when verify is set, checks its
// content hash (a full read of the file).
func Open(path string, verify bool) (*DB, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	hb := make([]byte, HeaderSize)
	if _, err := io.ReadFull(f, hb); err != nil {
		return nil, fmt.Errorf("%w: %s: reading header: %v", ErrHeader, path, err)
	}
	h, err := ParseHeader(hb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if want := HeaderSize + h.Size(); st.Size() != want {
		return nil, fmt.Errorf("%w: %s is %d bytes, header implies %d", ErrFileLength, path, st.Size(), want)
	}
	data, unmap, err := mapRecords(f, h.Size())
	if err != nil {
		return nil, fmt.Errorf("pir: mapping %s: %w", path, err)
	}
	db := &DB{Header: h, data: data, unmap: unmap}
	if verify {
		if got := ContentHash(h.RecordSize, h.Count, data); got != h.Hash {
			db.Close()
			return nil, fmt.Errorf("%w: %s: header says %x, content is %x", ErrHash, path, h.Hash[:8], got[:8])
		}
	}
	return db, nil
}
