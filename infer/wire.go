package infer

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kord-fss/kord/fss"
)

// The material wire format, for a trusted dealer that ships each party its
// material (the baseline of inferdemo.DealerLink). Simple and strict:
//
//	Material: "KMAT1\n", party byte, uvarint layer count, then per layer a
//	tag byte: 0 nothing; 1 linear (words R, words Z); 2 truncation (keys
//	c, keys w, words ρ, words σ); 3 ReLU batches (uvarint count, then per
//	batch keys f, keys g, words r1, r2, s).
//	Session: "KSES1\n", party byte, uvarint layer count, then per layer
//	its weight-mask share as words (empty for non-linear layers).
//	words: uvarint n, a width byte w (1..8), n little-endian w-byte words.
//	keys: uvarint n, and if n > 0 uvarint stride, n kord-v1 keys of one
//	shape at that stride.
//
// Words are written at ⌈bits/8⌉ bytes for their field's width (ring
// values ⌈ℓ/8⌉, ρ ⌈(s+1)/8⌉, σ ⌈(ℓ+1)/8⌉), so the shipped size is the
// material's own size plus a few bytes of framing per layer.

// ErrMaterialFormat wraps every error of ParseMaterial and ParseSession.
var ErrMaterialFormat = errors.New("infer: material encoding")

const (
	materialMagic = "KMAT1\n"
	sessionMagic  = "KSES1\n"
)

func appendWords(b []byte, v []uint64, bits int) []byte {
	w := max(1, min(8, (bits+7)/8))
	b = binary.AppendUvarint(b, uint64(len(v)))
	b = append(b, byte(w))
	var t [8]byte
	for _, x := range v {
		binary.LittleEndian.PutUint64(t[:], x)
		b = append(b, t[:w]...)
	}
	return b
}

func appendKeys(b []byte, ks []*fss.Key) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(ks)))
	if len(ks) == 0 {
		return b, nil
	}
	stride := ks[0].Params().KeySize()
	b = binary.AppendUvarint(b, uint64(stride))
	for i, k := range ks {
		if k == nil || k.Params() != ks[0].Params() {
			return nil, fmt.Errorf("infer: key %d missing or of another shape", i)
		}
		var err error
		if b, err = k.AppendBinary(b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// truncBits is the field width of a truncation's two mask shares.
func truncBits(ring int, m *truncMat) (rho, sig int) {
	rho, sig = ring, ring+1
	if len(m.c) > 0 {
		rho = m.c[0].Params().InBits
	}
	if len(m.w) > 0 {
		sig = m.w[0].Params().InBits
	}
	return rho, sig
}

// MarshalBinary writes the material (for a dealer to ship it). The ring
// width sets the word width; ℓ = 64 truncation material (the two-round
// gates form) has no encoding and is refused.
func (m *Material) MarshalBinary(ring int) ([]byte, error) {
	if m == nil || m.used {
		return nil, errors.New("infer: no material, or material already used")
	}
	b := make([]byte, 0, m.encodedSize(ring))
	b = append(b, materialMagic...)
	b = append(b, byte(m.B))
	b = binary.AppendUvarint(b, uint64(len(m.layers)))
	var err error
	for i := range m.layers {
		l := &m.layers[i]
		switch {
		case len(l.gs) > 0:
			return nil, fmt.Errorf("infer: layer %d: ℓ = 64 truncation material has no encoding", i)
		case l.lin != nil:
			b = append(b, 1)
			b = appendWords(b, l.lin.R, ring)
			b = appendWords(b, l.lin.Z, ring)
		case l.trunc != nil:
			rb, sb := truncBits(ring, l.trunc)
			b = append(b, 2)
			if b, err = appendKeys(b, l.trunc.c); err != nil {
				return nil, err
			}
			if b, err = appendKeys(b, l.trunc.w); err != nil {
				return nil, err
			}
			b = appendWords(b, l.trunc.rho, rb)
			b = appendWords(b, l.trunc.sig, sb)
		case len(l.relus) > 0:
			b = append(b, 3)
			b = binary.AppendUvarint(b, uint64(len(l.relus)))
			for _, r := range l.relus {
				if b, err = appendKeys(b, r.f); err != nil {
					return nil, err
				}
				if b, err = appendKeys(b, r.g); err != nil {
					return nil, err
				}
				b = appendWords(b, r.r1, ring)
				b = appendWords(b, r.r2, ring)
				b = appendWords(b, r.s, ring)
			}
		default:
			b = append(b, 0)
		}
	}
	return b, nil
}

// encodedSize bounds MarshalBinary's output from above (so it is written
// without a reallocation of a multi-megabyte buffer).
func (m *Material) encodedSize(ring int) int {
	keys := func(ks []*fss.Key) int {
		if len(ks) == 0 {
			return 10
		}
		return 20 + len(ks)*ks[0].Params().KeySize()
	}
	n := 32
	for i := range m.layers {
		l := &m.layers[i]
		n += 1
		if l.lin != nil {
			n += 20 + 8*(len(l.lin.R)+len(l.lin.Z))
		}
		if t := l.trunc; t != nil {
			n += keys(t.c) + keys(t.w) + 20 + 8*(len(t.rho)+len(t.sig))
		}
		for _, r := range l.relus {
			n += keys(r.f) + keys(r.g) + 30 + 8*(len(r.r1)+len(r.r2)+len(r.s))
		}
		n += 10
	}
	return n
}

// matReader is a reader of material encodings (ErrMaterialFormat).
type matReader struct{ reader }

var errShort = errors.New("truncated")

func (r *matReader) byte(what string) byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail(what, errShort)
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

func (r *matReader) words(what string) []uint64 {
	n := r.uv(what, len(r.b))
	w := int(r.byte(what))
	if r.err != nil {
		return nil
	}
	if w < 1 || w > 8 {
		r.fail(what, fmt.Errorf("word width %d", w))
		return nil
	}
	if n > (len(r.b)-r.off)/w {
		r.fail(what, errShort)
		return nil
	}
	out := make([]uint64, n)
	var t [8]byte
	for i := range out {
		copy(t[:w], r.b[r.off:r.off+w])
		out[i] = binary.LittleEndian.Uint64(t[:])
		r.off += w
	}
	return out
}

func (r *matReader) keys(what string) []*fss.Key {
	n := r.uv(what, len(r.b))
	if r.err != nil || n == 0 {
		return nil
	}
	stride := r.uv(what, len(r.b))
	if r.err != nil {
		return nil
	}
	if stride == 0 || n > (len(r.b)-r.off)/stride {
		r.fail(what, errShort)
		return nil
	}
	ks, err := fss.ParseKeys(r.b[r.off:r.off+n*stride], stride, n)
	if err != nil {
		r.fail(what, err)
		return nil
	}
	r.off += n * stride
	return ks
}

// ParseMaterial reads material written by MarshalBinary. Every failure
// wraps ErrMaterialFormat and names the field and offset; it never
// panics. Sizes are checked against the model by Eval.
func ParseMaterial(data []byte) (*Material, error) {
	r := &matReader{reader{b: data, kind: ErrMaterialFormat}}
	if len(data) < len(materialMagic) || string(data[:len(materialMagic)]) != materialMagic {
		return nil, fmt.Errorf("%w: bad magic", ErrMaterialFormat)
	}
	r.off = len(materialMagic)
	m := &Material{B: int(r.byte("party"))}
	nl := r.uv("layer count", 1<<10)
	for i := 0; i < nl && r.err == nil; i++ {
		var l layerMat
		switch tag := r.byte("layer tag"); tag {
		case 0:
		case 1:
			l.lin = &LinearCorr{R: r.words("R"), Z: r.words("Z")}
		case 2:
			l.trunc = &truncMat{c: r.keys("trunc c keys"), w: r.keys("trunc w keys")}
			l.trunc.rho, l.trunc.sig = r.words("ρ"), r.words("σ")
		case 3:
			nb := r.uv("ReLU batches", 64)
			for j := 0; j < nb && r.err == nil; j++ {
				rm := &reluMat{f: r.keys("ReLU f keys"), g: r.keys("ReLU g keys")}
				rm.r1, rm.r2, rm.s = r.words("r1"), r.words("r2"), r.words("s")
				l.relus = append(l.relus, rm)
			}
		default:
			r.fail("layer tag", fmt.Errorf("unknown tag %d", tag))
		}
		m.layers = append(m.layers, l)
	}
	if r.err == nil && (m.B != 0 && m.B != 1) {
		r.fail("party", fmt.Errorf("party %d", m.B))
	}
	if r.err == nil && r.off != len(data) {
		r.fail("end", fmt.Errorf("%d trailing bytes", len(data)-r.off))
	}
	if r.err != nil {
		m.Wipe()
		return nil, r.err
	}
	return m, nil
}

// MarshalBinary writes the session's weight-mask shares (before Open).
func (s *Session) MarshalBinary(ring int) ([]byte, error) {
	if s == nil || s.opened || s.failed {
		return nil, errors.New("infer: no session, or a session already opened")
	}
	b := append([]byte(sessionMagic), byte(s.B))
	b = binary.AppendUvarint(b, uint64(len(s.a)))
	for _, a := range s.a {
		b = appendWords(b, a, ring)
	}
	return b, nil
}

// ParseSession reads a session written by Session.MarshalBinary.
func ParseSession(data []byte) (*Session, error) {
	r := &matReader{reader{b: data, kind: ErrMaterialFormat}}
	if len(data) < len(sessionMagic) || string(data[:len(sessionMagic)]) != sessionMagic {
		return nil, fmt.Errorf("%w: bad magic", ErrMaterialFormat)
	}
	r.off = len(sessionMagic)
	s := &Session{B: int(r.byte("party"))}
	nl := r.uv("layer count", 1<<10)
	for i := 0; i < nl && r.err == nil; i++ {
		a := r.words("weight mask")
		if len(a) == 0 {
			a = nil
		}
		s.a = append(s.a, a)
	}
	if r.err == nil && (s.B != 0 && s.B != 1) {
		r.fail("party", fmt.Errorf("party %d", s.B))
	}
	if r.err == nil && r.off != len(data) {
		r.fail("end", fmt.Errorf("%d trailing bytes", len(data)-r.off))
	}
	if r.err != nil {
		for _, a := range s.a {
			clear(a)
		}
		return nil, r.err
	}
	s.what = make([][]uint64, len(s.a))
	return s, nil
}
