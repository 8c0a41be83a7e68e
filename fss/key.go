package fss

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kord-fss/kord/internal/prg"
)

// Type is the kind of function a key shares.
type Type uint8

const (
	DPF Type = 0x01 // point function: β at α, 0 elsewhere
	DCF Type = 0x02 // comparison function: β for x < α, 0 elsewhere
)

func (t Type) String() string {
	switch t {
	case DPF:
		return "dpf"
	case DCF:
		return "dcf"
	}
	return fmt.Sprintf("type(%#02x)", uint8(t))
}

// ParseType maps "dpf" and "dcf" to their Type.
func ParseType(s string) (Type, error) {
	switch s {
	case "dpf", "DPF":
		return DPF, nil
	case "dcf", "DCF":
		return DCF, nil
	}
	return 0, fmt.Errorf("fss: unknown key type %q (want dpf or dcf)", s)
}

// Params are the shape of a key: its type, input width ℓ and output width n.
type Params struct {
	Type    Type
	InBits  int // ℓ, 1..64
	OutBits int // n, 1..64
}

// Validate reports whether p describes a kord-v1 key.
func (p Params) Validate() error {
	if p.Type != DPF && p.Type != DCF {
		return fmt.Errorf("%w: %#02x", ErrType, uint8(p.Type))
	}
	if p.InBits < 1 || p.InBits > 64 {
		return fmt.Errorf("%w: %d", ErrInBits, p.InBits)
	}
	if p.OutBits < 1 || p.OutBits > 64 {
		return fmt.Errorf("%w: %d", ErrOutBits, p.OutBits)
	}
	return nil
}

// KeySize returns the length in bytes of a serialized key with these params.
func (p Params) KeySize() int {
	vb := valueBytes(p.OutBits)
	n := headerSize + 16 + 16*p.InBits + (2*p.InBits+7)/8 + vb
	if p.Type == DCF {
		n += p.InBits * vb
	}
	return n
}

func (p Params) String() string { return fmt.Sprintf("%v-%d→%d", p.Type, p.InBits, p.OutBits) }

// Key is one party's share of a DPF or DCF. A Key is obtained only from Gen
// (or a batch generator) or UnmarshalBinary, so it is always well formed.
type Key struct {
	p      Params
	party  uint8
	root   prg.Block
	seedCW []prg.Block // sCW_1..sCW_ℓ
	tL, tR uint64      // bit j-1 holds tLCW_j / tRCW_j
	valCW  []uint64    // DCF only: VCW_1..VCW_ℓ
	final  uint64      // CW_last
}

// Params returns the key's type and widths.
func (k *Key) Params() Params { return k.p }

// Party returns 0 or 1.
func (k *Key) Party() int { return int(k.party) }

// Equal reports whether two keys are the same key share.
func (k *Key) Equal(o *Key) bool {
	if k.p != o.p || k.party != o.party || k.root != o.root || k.tL != o.tL || k.tR != o.tR || k.final != o.final {
		return false
	}
	for i := range k.seedCW {
		if k.seedCW[i] != o.seedCW[i] {
			return false
		}
	}
	for i := range k.valCW {
		if k.valCW[i] != o.valCW[i] {
			return false
		}
	}
	return true
}

// Wipe overwrites the key's secret material (its root seed and corrections)
// with zeros. Go may have copied the bytes elsewhere (the garbage collector
// moves nothing, but earlier slices may survive); see docs/threat-model.md.
func (k *Key) Wipe() {
	k.root = prg.Block{}
	clear(k.seedCW)
	clear(k.valCW)
	k.tL, k.tR, k.final = 0, 0, 0
}

const (
	magic      = 0x4B
	version    = 0x01
	headerSize = 6
)

// Errors returned by UnmarshalBinary; each names the field at fault. They
// are wrapped with the offending value, so test with errors.Is.
var (
	ErrMagic       = errors.New("fss: key magic is not 0x4b")
	ErrVersion     = errors.New("fss: key version is not 0x01")
	ErrType        = errors.New("fss: key type is not dpf (0x01) or dcf (0x02)")
	ErrParty       = errors.New("fss: key party is not 0 or 1")
	ErrInBits      = errors.New("fss: input width ℓ is outside 1..64")
	ErrOutBits     = errors.New("fss: output width n is outside 1..64")
	ErrLength      = errors.New("fss: key length does not match its header")
	ErrValueBits   = errors.New("fss: value field has bits set above n")
	ErrControlBits = errors.New("fss: unused control-bit positions are set")
)

func valueBytes(n int) int { return (n + 7) / 8 }

// MarshalBinary returns the kord-v1 serialization of the key.
func (k *Key) MarshalBinary() ([]byte, error) {
	return k.AppendBinary(make([]byte, 0, k.p.KeySize()))
}

// AppendBinary appends the kord-v1 serialization of the key to b.
func (k *Key) AppendBinary(b []byte) ([]byte, error) {
	l, n := k.p.InBits, k.p.OutBits
	b = append(b, magic, version, byte(k.p.Type), k.party, byte(l), byte(n))
	b = appendTree(b, &k.root, k.seedCW, k.tL, k.tR)
	vb := valueBytes(n)
	var w [8]byte
	for _, v := range k.valCW {
		binary.LittleEndian.PutUint64(w[:], v)
		b = append(b, w[:vb]...)
	}
	binary.LittleEndian.PutUint64(w[:], k.final)
	b = append(b, w[:vb]...)
	return b, nil
}

// UnmarshalBinary parses a kord-v1 key strictly: every byte string is either
// a valid key or an error that names the field at fault. It never panics.
func (k *Key) UnmarshalBinary(data []byte) error {
	if err := checkHeader(data); err != nil {
		return err
	}
	p := Params{Type: Type(data[2]), InBits: int(data[4]), OutBits: int(data[5])}
	if p.Type != DPF && p.Type != DCF {
		return fmt.Errorf("%w: got %#02x", ErrType, data[2])
	}
	if data[3] > 1 {
		return fmt.Errorf("%w: got %d", ErrParty, data[3])
	}
	if p.InBits < 1 || p.InBits > 64 {
		return fmt.Errorf("%w: got %d", ErrInBits, p.InBits)
	}
	if p.OutBits < 1 || p.OutBits > 64 {
		return fmt.Errorf("%w: got %d", ErrOutBits, p.OutBits)
	}
	if want := p.KeySize(); len(data) != want {
		return fmt.Errorf("%w: got %d bytes, a %v key is %d", ErrLength, len(data), p, want)
	}
	l, n := p.InBits, p.OutBits
	nk := Key{p: p, party: data[3], seedCW: make([]prg.Block, l)}
	off, err := parseTree(data, headerSize, &nk.root, nk.seedCW, &nk.tL, &nk.tR)
	if err != nil {
		return err
	}
	vb := valueBytes(n)
	// readValue reads the next value field; level is its 1-based VCW index,
	// 0 for CW_last (named only when it is malformed).
	readValue := func(level int) (uint64, error) {
		var w [8]byte
		copy(w[:], data[off:off+vb])
		off += vb
		v := binary.LittleEndian.Uint64(w[:])
		if v&^prg.Mask(n) != 0 {
			if level == 0 {
				return 0, fmt.Errorf("%w: CW_last", ErrValueBits)
			}
			return 0, fmt.Errorf("%w: VCW_%d", ErrValueBits, level)
		}
		return v, nil
	}
	if p.Type == DCF {
		nk.valCW = make([]uint64, l)
		for j := range nk.valCW {
			v, err := readValue(j + 1)
			if err != nil {
				return err
			}
			nk.valCW[j] = v
		}
	}
	v, err := readValue(0)
	if err != nil {
		return err
	}
	nk.final = v
	*k = nk
	return nil
}

// ParseKey is UnmarshalBinary into a new Key.
func ParseKey(data []byte) (*Key, error) {
	k := new(Key)
	if err := k.UnmarshalBinary(data); err != nil {
		return nil, err
	}
	return k, nil
}

// appendTree appends the part every key type shares: the root seed, the
// seed corrections sCW_1..sCW_d and the control-bit corrections packed
// least-significant bit first (tLCW_j at bit 2(j-1), tRCW_j at 2(j-1)+1).
func appendTree(b []byte, root *prg.Block, seedCW []prg.Block, tL, tR uint64) []byte {
	b = append(b, root[:]...)
	for i := range seedCW {
		b = append(b, seedCW[i][:]...)
	}
	var ctrl [16]byte
	for j := range seedCW {
		ctrl[(2*j)/8] |= byte(tL>>uint(j)&1) << uint((2*j)%8)
		ctrl[(2*j+1)/8] |= byte(tR>>uint(j)&1) << uint((2*j+1)%8)
	}
	return append(b, ctrl[:(2*len(seedCW)+7)/8]...)
}

// parseTree reads what appendTree wrote, for len(seedCW) levels, from data
// at off (the caller has checked the length) and returns the offset after
// it. Set padding bits in the control-bit field are an error.
func parseTree(data []byte, off int, root *prg.Block, seedCW []prg.Block, tL, tR *uint64) (int, error) {
	copy(root[:], data[off:])
	off += 16
	for j := range seedCW {
		copy(seedCW[j][:], data[off:])
		off += 16
	}
	d := len(seedCW)
	nc := (2*d + 7) / 8
	ctrl := data[off : off+nc]
	for j := 0; j < d; j++ {
		*tL |= uint64(ctrl[(2*j)/8]>>uint((2*j)%8)&1) << uint(j)
		*tR |= uint64(ctrl[(2*j+1)/8]>>uint((2*j+1)%8)&1) << uint(j)
	}
	if used := 2 * d; used%8 != 0 && ctrl[nc-1]>>uint(used%8) != 0 {
		return 0, fmt.Errorf("%w: last control byte %#02x", ErrControlBits, ctrl[nc-1])
	}
	return off + nc, nil
}

// checkHeader checks the length, magic and version every kord-v1 key
// starts with; the type-specific fields are the caller's.
func checkHeader(data []byte) error {
	if len(data) < headerSize {
		return fmt.Errorf("%w: %d bytes is shorter than the 6-byte header", ErrLength, len(data))
	}
	if data[0] != magic {
		return fmt.Errorf("%w: got %#02x", ErrMagic, data[0])
	}
	if data[1] != version {
		return fmt.Errorf("%w: got %#02x", ErrVersion, data[1])
	}
	return nil
}
