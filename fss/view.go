package fss

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kord-fss/kord/internal/prg"
)

// KeyView is one serialized kord-v1 DPF or DCF key share read in place: a
// validated view over the caller's bytes that evaluates like the Key that
// ParseKey would return, without copying the key or allocating. ViewKey
// accepts exactly the byte strings ParseKey accepts and refuses the others
// with the same errors.
//
// The view refers to the caller's buffer, which must not change while the
// view is used. Each evaluation checks that the 6-byte header still reads
// as it did when the view was made, so a view whose bytes were wiped (for
// instance a key of a released client.Batch) is refused with ErrStaleView;
// a buffer reused for another key of the same shape is not detected. The
// zero KeyView is refused the same way. A KeyView holds the key's control
// bits and last correction word; drop or zero it with the buffer.
type KeyView struct {
	b      []byte // exactly p.KeySize() bytes
	p      Params
	party  uint8
	tL, tR uint64 // as in Key
	final  uint64
}

// ErrStaleView is returned by evaluations on a zero KeyView or on one whose
// buffer no longer starts with the header it was made from.
var ErrStaleView = errors.New("fss: key view is empty or its bytes were wiped or changed since it was made")

// ViewKey validates data as ParseKey does, with the same checks and the
// same errors, and returns a view over it. It allocates only on error.
func ViewKey(data []byte) (KeyView, error) {
	if err := checkHeader(data); err != nil {
		return KeyView{}, err
	}
	p := Params{Type: Type(data[2]), InBits: int(data[4]), OutBits: int(data[5])}
	if p.Type != DPF && p.Type != DCF {
		return KeyView{}, fmt.Errorf("%w: got %#02x", ErrType, data[2])
	}
	if data[3] > 1 {
		return KeyView{}, fmt.Errorf("%w: got %d", ErrParty, data[3])
	}
	if p.InBits < 1 || p.InBits > 64 {
		return KeyView{}, fmt.Errorf("%w: got %d", ErrInBits, p.InBits)
	}
	if p.OutBits < 1 || p.OutBits > 64 {
		return KeyView{}, fmt.Errorf("%w: got %d", ErrOutBits, p.OutBits)
	}
	if want := p.KeySize(); len(data) != want {
		return KeyView{}, fmt.Errorf("%w: got %d bytes, a %v key is %d", ErrLength, len(data), p, want)
	}
	v := KeyView{b: data[:len(data):len(data)], p: p, party: data[3]}
	if err := v.scan(true); err != nil {
		return KeyView{}, err
	}
	return v, nil
}

// ViewKeys validates buf as len(dst) keys laid end to end at stride bytes
// each, as ViewKey validates each of them, and writes their views to dst.
// A key with the header of the first (the party byte aside) is not
// re-derived: its shape and length are the first's, so only its control
// bits and value fields are checked, in one pass over the keys. On a bad
// key it returns the key's index and ViewKey's error for it, and zeroes
// dst. It allocates only on error.
func ViewKeys(dst []KeyView, buf []byte, stride int) (int, error) {
	n := len(dst)
	if n == 0 && len(buf) == 0 {
		return 0, nil
	}
	if stride < 1 || n < 1 || len(buf)/stride != n || len(buf)%stride != 0 {
		return 0, fmt.Errorf("%w: %d keys of %d bytes, got %d bytes", ErrLength, n, stride, len(buf))
	}
	first, err := ViewKey(buf[:stride:stride])
	if err != nil {
		return 0, err
	}
	dst[0] = first
	if n == 1 {
		return 0, nil
	}
	// A valid key is longer than 8 bytes; bytes 0-2 and 4-5 are the
	// header less the party byte.
	const hdrMask = 0x0000ffff00ffffff
	want := binary.LittleEndian.Uint64(buf) & hdrMask
	sl := first.p.scanLayout()
	for i := 1; i < n; i++ {
		b := buf[i*stride : (i+1)*stride : (i+1)*stride]
		if binary.LittleEndian.Uint64(b)&hdrMask != want || b[3] > 1 {
			v, err := ViewKey(b) // the error for this key (or another shape of this size)
			if err != nil {
				clear(dst)
				return i, err
			}
			dst[i] = v
			continue
		}
		v := &dst[i] // filled in place: a KeyView is 80 bytes
		*v = KeyView{b: b, p: first.p, party: b[3]}
		if err := v.scanAt(&sl, true); err != nil {
			clear(dst)
			return i, err
		}
	}
	return 0, nil
}

// layout returns the offsets of a key's control bits and value fields and
// the width of a value field.
func (p Params) layout() (ctrlOff, valOff, vb int) {
	l := p.InBits
	ctrlOff = headerSize + 16 + 16*l
	return ctrlOff, ctrlOff + (2*l+7)/8, valueBytes(p.OutBits)
}

// scan reads the control bits and CW_last of v.b (whose header and length
// are checked) into v; with check it refuses set padding bits and value
// fields with bits above n, in ParseKey's order and with its errors.
func (v *KeyView) scan(check bool) error {
	sl := v.p.scanLayout()
	return v.scanAt(&sl, check)
}

// scanLayout is what scan needs of a key's shape, worked out once for a
// run of keys of that shape (ViewKeys).
type scanLayout struct {
	l                 int
	ctrlOff, valOff   int
	vb, finalOff      int
	padShift          uint // used bits of the last control byte (0: all)
	valShift          uint // n mod 8, DCF only (0: no value field checks)
	ctrlMask, valMask uint64
}

func (p Params) scanLayout() scanLayout {
	l, n := p.InBits, p.OutBits
	ctrlOff, valOff, vb := p.layout()
	sl := scanLayout{l: l, ctrlOff: ctrlOff, valOff: valOff, vb: vb, finalOff: valOff,
		padShift: uint(2 * l % 8), ctrlMask: prg.Mask(l), valMask: prg.Mask(n)}
	if p.Type == DCF {
		sl.finalOff += l * vb
		sl.valShift = uint(n % 8)
	}
	return sl
}

// scanAt is scan with the shape's layout sl.
func (v *KeyView) scanAt(sl *scanLayout, check bool) error {
	ctrl := v.b[sl.ctrlOff:sl.valOff]
	nc := len(ctrl)
	// The control bits interleave tLCW_j (even) and tRCW_j (odd): bytes
	// 0-7 hold levels 1-32, bytes 8-15 (ℓ > 32) the rest.
	var lo, hi uint64
	if nc >= 8 {
		lo = binary.LittleEndian.Uint64(ctrl)
		if nc > 8 {
			var w [8]byte
			copy(w[:], ctrl[8:])
			hi = binary.LittleEndian.Uint64(w[:])
		}
	} else {
		var w [8]byte
		copy(w[:], ctrl)
		lo = binary.LittleEndian.Uint64(w[:])
	}
	tL, tR := evenBits(lo), evenBits(lo>>1)
	if hi != 0 {
		tL |= evenBits(hi) << 32
		tR |= evenBits(hi>>1) << 32
	}
	tL &= sl.ctrlMask
	tR &= sl.ctrlMask
	if check && sl.padShift != 0 && ctrl[nc-1]>>sl.padShift != 0 {
		return fmt.Errorf("%w: last control byte %#02x", ErrControlBits, ctrl[nc-1])
	}
	vb := sl.vb
	if r := sl.valShift; check && r != 0 {
		// A DCF's value field has bits above n only in its last byte,
		// above bit n mod 8 (none when n fills its bytes).
		off := sl.valOff
		for j := 1; j <= sl.l; j++ {
			if v.b[off+vb-1]>>r != 0 {
				return fmt.Errorf("%w: VCW_%d", ErrValueBits, j)
			}
			off += vb
		}
	}
	final := readValue(v.b[sl.finalOff : sl.finalOff+vb])
	if check && final&^sl.valMask != 0 {
		return fmt.Errorf("%w: CW_last", ErrValueBits)
	}
	v.tL, v.tR, v.final = tL, tR, final
	return nil
}

// evenBits gathers bits 0, 2, …, 62 of x into bits 0..31.
func evenBits(x uint64) uint64 {
	x &= 0x5555555555555555
	x = (x | x>>1) & 0x3333333333333333
	x = (x | x>>2) & 0x0f0f0f0f0f0f0f0f
	x = (x | x>>4) & 0x00ff00ff00ff00ff
	x = (x | x>>8) & 0x0000ffff0000ffff
	return (x | x>>16) & 0x00000000ffffffff
}

// readValue reads a little-endian value field of up to 8 bytes.
func readValue(b []byte) uint64 {
	if len(b) == 8 {
		return binary.LittleEndian.Uint64(b)
	}
	var w [8]byte
	copy(w[:], b)
	return binary.LittleEndian.Uint64(w[:])
}

// Params returns the key's type and widths (zero for the zero view).
func (v KeyView) Params() Params { return v.p }

// Party returns 0 or 1.
func (v KeyView) Party() int { return int(v.party) }

// Bytes returns the serialized key the view reads: a slice of the caller's
// buffer, not a copy (nil for the zero view).
func (v KeyView) Bytes() []byte { return v.b }

// IsZero reports whether v is the zero KeyView (no key).
func (v KeyView) IsZero() bool { return v.b == nil }

// Key returns the viewed key as a Key of its own (a copy), equal to what
// ParseKey returns for the bytes; it does not validate them again, beyond
// refusing a view whose header or value fields have changed since.
func (v KeyView) Key() (*Key, error) {
	if err := v.live(); err != nil {
		return nil, err
	}
	l := v.p.InBits
	k := &Key{p: v.p, party: v.party, root: *(*prg.Block)(v.b[headerSize : headerSize+16]), seedCW: make([]prg.Block, l),
		tL: v.tL, tR: v.tR, final: v.final}
	for j := range k.seedCW {
		k.seedCW[j] = *v.seedCW(j)
	}
	if v.p.Type == DCF {
		mask := prg.Mask(v.p.OutBits)
		_, off, vb := v.p.layout()
		k.valCW = make([]uint64, l)
		for j := range k.valCW {
			if k.valCW[j] = readValue(v.b[off : off+vb]); k.valCW[j]&^mask != 0 {
				k.Wipe()
				return nil, ErrStaleView
			}
			off += vb
		}
	}
	return k, nil
}

// live checks that v is a view whose header is still in place.
func (v *KeyView) live() error {
	b := v.b
	if len(b) < headerSize || b[0] != magic || b[1] != version || Type(b[2]) != v.p.Type || b[3] != v.party ||
		int(b[4]) != v.p.InBits || int(b[5]) != v.p.OutBits {
		return ErrStaleView
	}
	return nil
}

// seedCW returns sCW_{j+1}, the seed correction of level j (0-based).
func (v *KeyView) seedCW(j int) *prg.Block {
	off := headerSize + 16 + 16*j
	return (*prg.Block)(v.b[off : off+16])
}

// Eval returns this party's share of f(x), equal to the parsed Key's Eval.
// x must be below 2^ℓ.
func (v KeyView) Eval(x uint64) (uint64, error) {
	if err := v.live(); err != nil {
		return 0, err
	}
	if err := checkX(x, v.p.InBits); err != nil {
		return 0, err
	}
	return v.eval(x), nil
}

// eval is Key.eval reading the corrections from the serialized key.
func (v *KeyView) eval(x uint64) uint64 {
	k := Key{p: v.p, party: v.party, root: *(*prg.Block)(v.b[headerSize : headerSize+16]), tL: v.tL, tR: v.tR, final: v.final}
	y := evalPath(&k, v.b, x)
	k.root = prg.Block{}
	return y
}

// EvalAll is Key.EvalAll on the viewed key: out must have 2^ℓ entries.
// The full-domain kernels want the corrections as words, so it copies them
// into scratch (one allocation of O(ℓ) beside the evaluation's own, wiped
// afterwards).
func (v KeyView) EvalAll(out []uint64) error {
	k, err := v.Key()
	if err != nil {
		return err
	}
	defer k.Wipe()
	return k.EvalAll(out)
}

// EvalRange is Key.EvalRange on the viewed key, with EvalAll's scratch.
func (v KeyView) EvalRange(lo, hi uint64, out []uint64) error {
	k, err := v.Key()
	if err != nil {
		return err
	}
	defer k.Wipe()
	return k.EvalRange(lo, hi, out)
}

// Slab is N serialized key shares of one shape laid end to end at the
// shape's kord-v1 size (Params.KeySize), as BatchGen writes them and as
// a batch of keys arrives: read in place, without a view or a Key per key
// allocated.
type Slab struct {
	b []byte
	p Params
	n int
}

// ViewSlab validates buf as n keys of shape p at stride p.KeySize() —
// len(buf) must be exactly n·p.KeySize() and every key must be a key
// ParseKey accepts, of shape p (either party) — and returns a view of
// them. It allocates only on error, which names the first bad key.
func ViewSlab(buf []byte, p Params, n int) (Slab, error) {
	if err := p.Validate(); err != nil {
		return Slab{}, err
	}
	ks := p.KeySize()
	if n < 0 || n > len(buf)/ks || len(buf) != n*ks {
		return Slab{}, fmt.Errorf("%w: a slab of %d %v keys is %d×%d bytes, got %d", ErrLength, n, p, n, ks, len(buf))
	}
	for i := 0; i < n; i++ {
		v, err := ViewKey(buf[i*ks : (i+1)*ks])
		if err != nil {
			return Slab{}, fmt.Errorf("fss: slab key %d: %w", i, err)
		}
		if v.p != p {
			return Slab{}, fmt.Errorf("fss: slab key %d is a %v key, not %v", i, v.p, p)
		}
	}
	return Slab{b: buf[:len(buf):len(buf)], p: p, n: n}, nil
}

// Len returns the number of keys.
func (s Slab) Len() int { return s.n }

// Params returns the keys' shape.
func (s Slab) Params() Params { return s.p }

// Stride returns the size in bytes of each key (p.KeySize()).
func (s Slab) Stride() int {
	if s.n == 0 {
		return 0
	}
	return len(s.b) / s.n
}

// Bytes returns the slab's buffer (not a copy).
func (s Slab) Bytes() []byte { return s.b }

// Key returns a view of key i, 0 ≤ i < Len(). It rereads only the key's
// control bits and CW_last (validated by ViewSlab); a key whose header has
// changed since gives the zero view, which evaluations refuse.
func (s Slab) Key(i int) KeyView {
	if i < 0 || i >= s.n {
		return KeyView{}
	}
	ks := len(s.b) / s.n
	b := s.b[i*ks : (i+1)*ks : (i+1)*ks]
	v := KeyView{b: b, p: s.p, party: b[3]}
	if v.party > 1 || v.live() != nil {
		return KeyView{}
	}
	v.scan(false)
	return v
}
