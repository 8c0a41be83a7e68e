package pir

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kord-fss/kord/fss"
)

// Wire format (all integers little-endian); see docs/pir.md.
//
// Request, POST /v1/answer:
//
//	magic "KPQ1" | expected DB hash [32] | record size u32 | record count u64 |
//	key count K u32 | key length L u32 | K keys of L bytes (type 0x03)
//
// Response 200:
//
//	magic "KPA1" | DB hash [32] | record size u32 | answer count K u32 |
//	K answers of record-size bytes
//
// Any other status carries a JSON body {"code": ..., "error": ...}.

const (
	reqHeader  = 56
	respHeader = 44
	// MaxKeysPerRequest bounds one request's batch.
	MaxKeysPerRequest = 4096
)

var (
	reqMagic  = [4]byte{'K', 'P', 'Q', '1'}
	respMagic = [4]byte{'K', 'P', 'A', '1'}
)

// Errors of the wire protocol and of queries; the client maps a server's
// error code back to these, so errors.Is works across the network.
var (
	ErrMessage            = errors.New("pir: malformed message")
	ErrDBChanged          = errors.New("pir: the server's database is not the one the client expects (hash differs)")
	ErrRecordSizeMismatch = errors.New("pir: record size differs from the server's database")
	ErrCountMismatch      = errors.New("pir: record count differs from the server's database")
	ErrIndexRange         = errors.New("pir: record index out of range")
	ErrTooManyKeys        = errors.New("pir: too many keys in one request")
	// ErrStopping means the server was shutting down and did not answer.
	ErrStopping        = errors.New("pir: the server is stopping")
	ErrServersDisagree = errors.New("pir: the two servers hold different databases")
)

// Request is one batch of keys for one server.
type Request struct {
	Hash       [32]byte // the database the client expects
	RecordSize int
	Count      int
	Keys       []*fss.XorKey
}

// MarshalBinary encodes the request.
func (r *Request) MarshalBinary() ([]byte, error) {
	if len(r.Keys) == 0 || len(r.Keys) > MaxKeysPerRequest {
		return nil, fmt.Errorf("%w: %d keys (1..%d)", ErrTooManyKeys, len(r.Keys), MaxKeysPerRequest)
	}
	kl := fss.XorKeySize(r.Keys[0].InBits())
	b := make([]byte, reqHeader, reqHeader+len(r.Keys)*kl)
	copy(b, reqMagic[:])
	copy(b[4:36], r.Hash[:])
	binary.LittleEndian.PutUint32(b[36:], uint32(r.RecordSize))
	binary.LittleEndian.PutUint64(b[40:], uint64(r.Count))
	binary.LittleEndian.PutUint32(b[48:], uint32(len(r.Keys)))
	binary.LittleEndian.PutUint32(b[52:], uint32(kl))
	for i, k := range r.Keys {
		if k.InBits() != r.Keys[0].InBits() {
			return nil, fmt.Errorf("pir: key %d has ℓ = %d, key 0 has %d", i, k.InBits(), r.Keys[0].InBits())
		}
		var err error
		if b, err = k.AppendBinary(b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// parseHead checks the header both messages start with — at least header
// bytes, the magic, the database hash (into hash) and the record size,
// which it returns — naming the message what in errors.
func parseHead(b []byte, what string, header int, magic [4]byte, hash *[32]byte) (uint32, error) {
	if len(b) < header {
		return 0, fmt.Errorf("%w: %s of %d bytes is shorter than its %d-byte header", ErrMessage, what, len(b), header)
	}
	if [4]byte(b[:4]) != magic {
		return 0, fmt.Errorf("%w: %s magic %q", ErrMessage, what, b[:4])
	}
	copy(hash[:], b[4:36])
	rs := binary.LittleEndian.Uint32(b[36:])
	if rs < MinRecordSize || rs > MaxRecordSize {
		return 0, fmt.Errorf("%w: %d", ErrRecordSize, rs)
	}
	return rs, nil
}

// ParseRequest decodes a request strictly; each key must parse as a type
// 0x03 key. It never panics.
func ParseRequest(b []byte) (*Request, error) {
	r := &Request{}
	rs, err := parseHead(b, "request", reqHeader, reqMagic, &r.Hash)
	if err != nil {
		return nil, err
	}
	cnt := binary.LittleEndian.Uint64(b[40:])
	if cnt < 1 || cnt > MaxRecords {
		return nil, fmt.Errorf("%w: %d", ErrCount, cnt)
	}
	r.RecordSize, r.Count = int(rs), int(cnt)
	nk := binary.LittleEndian.Uint32(b[48:])
	kl := binary.LittleEndian.Uint32(b[52:])
	if nk == 0 || nk > MaxKeysPerRequest {
		return nil, fmt.Errorf("%w: %d keys (1..%d)", ErrTooManyKeys, nk, MaxKeysPerRequest)
	}
	if kl > uint32(fss.XorKeySize(64)) || uint64(len(b)-reqHeader) != uint64(nk)*uint64(kl) {
		return nil, fmt.Errorf("%w: %d bytes of keys for %d keys of %d bytes", ErrMessage, len(b)-reqHeader, nk, kl)
	}
	r.Keys = make([]*fss.XorKey, nk)
	for i := range r.Keys {
		off := reqHeader + i*int(kl)
		k, err := fss.ParseXorKey(b[off : off+int(kl)])
		if err != nil {
			return nil, fmt.Errorf("%w: key %d: %w", ErrMessage, i, err)
		}
		if i > 0 && k.InBits() != r.Keys[0].InBits() {
			return nil, fmt.Errorf("%w: key %d has ℓ = %d, key 0 has %d", ErrMessage, i, k.InBits(), r.Keys[0].InBits())
		}
		r.Keys[i] = k
	}
	return r, nil
}

// Response is one server's answers to a request.
type Response struct {
	Hash       [32]byte
	RecordSize int
	Answers    [][]byte
}

// MarshalBinary encodes the response.
func (r *Response) MarshalBinary() ([]byte, error) {
	b := make([]byte, respHeader, respHeader+len(r.Answers)*r.RecordSize)
	copy(b, respMagic[:])
	copy(b[4:36], r.Hash[:])
	binary.LittleEndian.PutUint32(b[36:], uint32(r.RecordSize))
	binary.LittleEndian.PutUint32(b[40:], uint32(len(r.Answers)))
	for i, a := range r.Answers {
		if len(a) != r.RecordSize {
			return nil, fmt.Errorf("pir: answer %d is %d bytes, records are %d", i, len(a), r.RecordSize)
		}
		b = append(b, a...)
	}
	return b, nil
}

// ParseResponse decodes a response strictly. It never panics.
func ParseResponse(b []byte) (*Response, error) {
	r := &Response{}
	rs, err := parseHead(b, "response", respHeader, respMagic, &r.Hash)
	if err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(b[40:])
	if n > MaxKeysPerRequest || uint64(len(b)-respHeader) != uint64(n)*uint64(rs) {
		return nil, fmt.Errorf("%w: %d bytes of answers for %d answers of %d bytes", ErrMessage, len(b)-respHeader, n, rs)
	}
	r.RecordSize = int(rs)
	r.Answers = make([][]byte, n)
	for i := range r.Answers {
		off := respHeader + i*int(rs)
		r.Answers[i] = b[off : off+int(rs) : off+int(rs)]
	}
	return r, nil
}
