package llama

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Block is one 16-byte LLAMA block in memory (and file) order.
type Block = [16]byte

// Params is the out-of-band shape of a key: LLAMA's files do not carry it.
type Params struct {
	InBits  int // Bin, 1..64
	OutBits int // Bout, 1..64
	Group   int // payload elements, ≥ 1
}

// MaxGroup bounds Group so that key sizes stay far from integer overflow;
// LLAMA itself uses small groups (the vectors go to 19).
const MaxGroup = 1 << 16

var (
	ErrInBits   = errors.New("llama: input width Bin is outside 1..64")
	ErrOutBits  = errors.New("llama: output width Bout is outside 1..64")
	ErrGroup    = errors.New("llama: group size is outside 1..65536")
	ErrLength   = errors.New("llama: key length does not match Bin, Bout and group size")
	ErrValue    = errors.New("llama: value has bits set at or above Bout")
	ErrAlpha    = errors.New("llama: α does not fit in Bin bits")
	ErrPayload  = errors.New("llama: payload does not match the group size")
	ErrRoots    = errors.New("llama: root blocks have equal control bits (bit 0)")
	ErrParty    = errors.New("llama: party is not 0 or 1")
	ErrInput    = errors.New("llama: x does not fit in Bin bits")
	ErrOutShape = errors.New("llama: output slice length is not the group size")
)

// Validate reports whether p is a shape LLAMA's DCF supports.
func (p Params) Validate() error {
	if p.InBits < 1 || p.InBits > 64 {
		return fmt.Errorf("%w: %d", ErrInBits, p.InBits)
	}
	if p.OutBits < 1 || p.OutBits > 64 {
		return fmt.Errorf("%w: %d", ErrOutBits, p.OutBits)
	}
	if p.Group < 1 || p.Group > MaxGroup {
		return fmt.Errorf("%w: %d", ErrGroup, p.Group)
	}
	return nil
}

func (p Params) String() string {
	return fmt.Sprintf("llama dcf Bin=%d Bout=%d group=%d", p.InBits, p.OutBits, p.Group)
}

// ElemBytes is how many bytes LLAMA's send_ge writes per group element of
// Bout bits: 1, 2, 4 or 8.
func ElemBytes(outBits int) int {
	switch {
	case outBits > 32:
		return 8
	case outBits > 16:
		return 4
	case outBits > 8:
		return 2
	default:
		return 1
	}
}

// KeySize is the exact length of one serialized key of shape p
// (p must be valid): 16·(Bin+1) + E·Group·(Bin+1).
func (p Params) KeySize() int {
	return (p.InBits + 1) * (16 + ElemBytes(p.OutBits)*p.Group)
}

func mask(n int) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(n) - 1
}

// Key is one party's parsed DCF key.
type Key struct {
	P    Params
	Root Block    // k[0]: the party's root seed, control bit in bit 0
	CW   []Block  // k[1..Bin]: seed correction, tL in bit 1, tR in bit 0
	G    []uint64 // final correction, Group elements mod 2^Bout
	V    []uint64 // per-level value corrections, V[level·Group+i]
}

// MarshalBinary writes the key exactly as LLAMA's Peer::send_dcf_keypack.
func (k *Key) MarshalBinary() ([]byte, error) {
	if err := k.check(); err != nil {
		return nil, err
	}
	return k.AppendBinary(make([]byte, 0, k.P.KeySize()))
}

// AppendBinary appends the key in LLAMA's layout to dst (LLAMA's .dat files
// are keys concatenated with no framing).
func (k *Key) AppendBinary(dst []byte) ([]byte, error) {
	if err := k.check(); err != nil {
		return nil, err
	}
	dst = append(dst, k.Root[:]...)
	for i := range k.CW {
		dst = append(dst, k.CW[i][:]...)
	}
	e := ElemBytes(k.P.OutBits)
	dst = appendValues(dst, k.G, e)
	dst = appendValues(dst, k.V, e)
	return dst, nil
}

func appendValues(dst []byte, vs []uint64, e int) []byte {
	var b [8]byte
	for _, v := range vs {
		binary.LittleEndian.PutUint64(b[:], v)
		dst = append(dst, b[:e]...)
	}
	return dst
}

// check is the structural invariant of a Key built in memory.
func (k *Key) check() error {
	if err := k.P.Validate(); err != nil {
		return err
	}
	if len(k.CW) != k.P.InBits || len(k.G) != k.P.Group || len(k.V) != k.P.InBits*k.P.Group {
		return fmt.Errorf("llama: key fields do not match %v (cw %d, g %d, v %d)", k.P, len(k.CW), len(k.G), len(k.V))
	}
	m := mask(k.P.OutBits)
	for i, v := range k.G {
		if v&^m != 0 {
			return fmt.Errorf("%w: g[%d]", ErrValue, i)
		}
	}
	for i, v := range k.V {
		if v&^m != 0 {
			return fmt.Errorf("%w: v[%d] (level %d)", ErrValue, i, i/k.P.Group)
		}
	}
	return nil
}

// Parse reads one key of shape p in LLAMA's layout. It is strict: the
// length must be exactly p.KeySize() and no g or v field may hold bits at
// or above Bout (LLAMA's writer never sets them). Any byte string yields
// either a key or an error naming the offending field.
func Parse(p Params, data []byte) (*Key, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if want := p.KeySize(); len(data) != want {
		return nil, fmt.Errorf("%w: got %d bytes, a %v key is %d", ErrLength, len(data), p, want)
	}
	k := &Key{P: p, CW: make([]Block, p.InBits), G: make([]uint64, p.Group), V: make([]uint64, p.InBits*p.Group)}
	copy(k.Root[:], data)
	off := 16
	for i := range k.CW {
		copy(k.CW[i][:], data[off:])
		off += 16
	}
	e := ElemBytes(p.OutBits)
	m := mask(p.OutBits)
	read := func(dst []uint64, name string) error {
		for i := range dst {
			var b [8]byte
			copy(b[:], data[off:off+e])
			v := binary.LittleEndian.Uint64(b[:])
			if v&^m != 0 {
				if name == "g" {
					return fmt.Errorf("%w: g[%d] at offset %d", ErrValue, i, off)
				}
				return fmt.Errorf("%w: v[%d] (level %d, element %d) at offset %d", ErrValue, i, i/p.Group, i%p.Group, off)
			}
			dst[i] = v
			off += e
		}
		return nil
	}
	if err := read(k.G, "g"); err != nil {
		return nil, err
	}
	if err := read(k.V, "v"); err != nil {
		return nil, err
	}
	return k, nil
}

// SplitKeys cuts a LLAMA .dat file holding n keys of shape p end to end
// (server.dat or client.dat of a run of DCF gates of one shape) into keys.
func SplitKeys(p Params, data []byte) ([]*Key, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	size := p.KeySize()
	if len(data)%size != 0 {
		return nil, fmt.Errorf("%w: a file of %d bytes is not a whole number of %d-byte %v keys", ErrLength, len(data), size, p)
	}
	keys := make([]*Key, 0, len(data)/size)
	for off := 0; off < len(data); off += size {
		k, err := Parse(p, data[off:off+size])
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", off/size, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}
