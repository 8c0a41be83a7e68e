package infer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// Kind is a layer type.
type Kind uint8

// The layer kinds. Linear layers (FC, Conv) carry weights and a bias;
// the others are parameterised by their shape alone.
const (
	FC      Kind = 1 // fully connected: y[o] = Σ_i W[o][i]·x[i] + B[o]
	Conv    Kind = 2 // 2-D convolution, stride 1, no padding, W[co][ci][kh][kw]
	ReLU    Kind = 3 // max(x, 0), two's complement
	MaxPool Kind = 4 // K×K windows, stride K
	Trunc   Kind = 5 // exact arithmetic right shift by S
	Flatten Kind = 6 // (C, H, W) → (C·H·W, 1, 1); no computation
	// Kinds 7 and up (strided and padded convolution and max-pool, average
	// pool, residual slots, space-to-depth) are in layers2.go.
)

func (k Kind) String() string {
	switch k {
	case FC:
		return "fc"
	case Conv:
		return "conv"
	case ReLU:
		return "relu"
	case MaxPool:
		return "maxpool"
	case Trunc:
		return "trunc"
	case Flatten:
		return "flatten"
	}
	if n := extName(k); n != "" {
		return n
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Shape is a tensor shape (channels, height, width), stored C-major.
type Shape struct{ C, H, W int }

// Len is C·H·W.
func (s Shape) Len() int { return s.C * s.H * s.W }

func (s Shape) String() string { return fmt.Sprintf("%d×%d×%d", s.C, s.H, s.W) }

// Layer is one layer of a feed-forward network. For FC, In and Out are the
// vector lengths; for Conv, In and Out are the channel counts and K the
// kernel side; for MaxPool, K is the window side; for Trunc, S is the
// shift. W and B (linear layers only) are fixed-point integers: W has Frac
// fractional bits and B has 2·Frac (it is added to the product before the
// truncation that follows). Party 1's copy of a model has nil W and B.
type Layer struct {
	Kind        Kind
	In, Out     int
	K, S        int
	Stride, Pad int // Conv2D, MaxPool2D and SpaceToDepth only (layers2.go)
	W, B        []int64
}

// Linear reports whether the layer is a bilinear layer with weights.
func (l *Layer) Linear() bool { return l.Kind == FC || l.Kind == Conv || l.Kind == Conv2D }

// Model is a fixed-point feed-forward network over Z_{2^Ring}: every wire
// value is a two's-complement Ring-bit integer, and a real value v is
// represented by round(v·2^Frac).
type Model struct {
	Name   string
	Ring   int // ℓ, 2..64
	Frac   int // fractional bits of activations and weights
	Input  Shape
	Layers []Layer
}

// Limits of the parser (a model file is untrusted input).
const (
	maxDim    = 1 << 16
	maxParams = 1 << 24
	maxLayers = 256
	maxName   = 64
)

// Shapes returns the input shape of every layer and the output shape of
// the model (len(Layers)+1 entries), or an error when the layers do not fit
// together.
func (m *Model) Shapes() ([]Shape, error) {
	if m.Ring < 2 || m.Ring > 64 {
		return nil, fmt.Errorf("infer: ring width %d is outside 2..64", m.Ring)
	}
	if m.Frac < 0 || 2*m.Frac >= m.Ring {
		return nil, fmt.Errorf("infer: %d fractional bits do not fit a %d-bit ring (need 2·frac < ring)", m.Frac, m.Ring)
	}
	s := m.Input
	if s.C < 1 || s.H < 1 || s.W < 1 || s.C > maxDim || s.H > maxDim || s.W > maxDim || s.Len() > maxParams {
		return nil, fmt.Errorf("infer: input shape %v is out of range", s)
	}
	if len(m.Layers) > maxLayers {
		return nil, fmt.Errorf("infer: %d layers exceed %d", len(m.Layers), maxLayers)
	}
	out := []Shape{s}
	params := 0
	var slots [maxSlots]Shape // residual slots (layers2.go); zero = empty
	for i := range m.Layers {
		l := &m.Layers[i]
		var err error
		switch l.Kind {
		case FC:
			if l.In != s.Len() || l.Out < 1 || l.Out > maxDim {
				err = fmt.Errorf("fc %d→%d does not take a %v input", l.In, l.Out, s)
			}
			s = Shape{l.Out, 1, 1}
		case Conv:
			if l.In != s.C || l.Out < 1 || l.Out > maxDim || l.K < 1 || l.K > s.H || l.K > s.W {
				err = fmt.Errorf("conv %d→%d k=%d does not take a %v input", l.In, l.Out, l.K, s)
			}
			s = Shape{l.Out, s.H - l.K + 1, s.W - l.K + 1}
		case ReLU, Flatten:
			if l.Kind == Flatten {
				s = Shape{s.Len(), 1, 1}
			}
		case MaxPool:
			if l.K < 1 || l.K > s.H || l.K > s.W {
				err = fmt.Errorf("maxpool %d does not take a %v input", l.K, s)
			}
			s = Shape{s.C, s.H / max(l.K, 1), s.W / max(l.K, 1)}
		case Trunc:
			if l.S < 1 || l.S >= m.Ring-1 {
				err = fmt.Errorf("trunc by %d is outside 1..%d", l.S, m.Ring-2)
			}
		default:
			s, err = shapeExt(l, s, m.Ring, &slots)
		}
		if err != nil {
			return nil, fmt.Errorf("infer: layer %d: %w", i, err)
		}
		if l.Linear() {
			params += l.weightLen() + l.Out
			if params > maxParams || s.Len() > maxParams {
				return nil, fmt.Errorf("infer: layer %d: more than %d parameters or outputs", i, maxParams)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// weightLen is the number of weights of a linear layer.
func (l *Layer) weightLen() int {
	switch l.Kind {
	case FC:
		return l.In * l.Out
	case Conv, Conv2D:
		return l.Out * l.In * l.K * l.K
	}
	return 0
}

// Validate checks the shapes and, when withWeights, that every linear
// layer carries exactly its weights and bias, each a Ring-bit signed value.
func (m *Model) Validate(withWeights bool) error {
	if _, err := m.Shapes(); err != nil {
		return err
	}
	if !withWeights {
		return nil
	}
	lim := int64(1) << uint(m.Ring-1)
	for i := range m.Layers {
		l := &m.Layers[i]
		if !l.Linear() {
			continue
		}
		if len(l.W) != l.weightLen() || len(l.B) != l.Out {
			return fmt.Errorf("infer: layer %d (%v): %d weights and %d biases, want %d and %d", i, l.Kind, len(l.W), len(l.B), l.weightLen(), l.Out)
		}
		for _, v := range [][]int64{l.W, l.B} {
			for _, x := range v {
				if m.Ring < 64 && (x >= lim || x < -lim) {
					return fmt.Errorf("infer: layer %d (%v): a parameter does not fit a %d-bit ring", i, l.Kind, m.Ring)
				}
			}
		}
	}
	return nil
}

// Arch returns the public architecture: a copy of the model without its
// weights, which is all the client (party 1) holds.
func (m *Model) Arch() *Model {
	a := *m
	a.Layers = make([]Layer, len(m.Layers))
	for i, l := range m.Layers {
		l.W, l.B = nil, nil
		a.Layers[i] = l
	}
	return &a
}

// The model file format (kord-infer-model v1), all integers little-endian
// varints (encoding/binary: Uvarint for sizes, zig-zag Varint for weights):
//
//	magic    "KORDNN1\n" (8 bytes)
//	name     uvarint length (≤ 64) then that many bytes of UTF-8
//	ring     uvarint ℓ (2..64)
//	frac     uvarint f (2f < ℓ)
//	input    uvarint C, H, W
//	layers   uvarint count (≤ 256), then per layer:
//	           kind  one byte (1 fc, 2 conv, 3 relu, 4 maxpool, 5 trunc, 6 flatten)
//	           fc:      uvarint in, out;   then in·out weights (row o holds W[o][·]) and out biases
//	           conv:    uvarint in, out, k; then out·in·k·k weights [co][ci][kh][kw] and out biases
//	           maxpool: uvarint k
//	           trunc:   uvarint s
//	           7..13:   the residual-network kinds, fields as layers2.go lists them
//	weights  varint each, fixed point with f fractional bits; biases with 2f
//
// Nothing may follow the last layer. Small weights take one byte each.
const magic = "KORDNN1\n"

// ErrFormat wraps every error of Parse.
var ErrFormat = errors.New("infer: model file")

// Marshal encodes the model (with its weights) in the file format.
func (m *Model) Marshal() ([]byte, error) {
	if err := m.Validate(true); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(magic)
	u := func(x int) { b.Write(binary.AppendUvarint(nil, uint64(x))) }
	u(len(m.Name))
	b.WriteString(m.Name)
	u(m.Ring)
	u(m.Frac)
	u(m.Input.C)
	u(m.Input.H)
	u(m.Input.W)
	u(len(m.Layers))
	for _, l := range m.Layers {
		b.WriteByte(byte(l.Kind))
		switch l.Kind {
		case FC:
			u(l.In)
			u(l.Out)
		case Conv:
			u(l.In)
			u(l.Out)
			u(l.K)
		case MaxPool:
			u(l.K)
		case Trunc:
			u(l.S)
		default:
			for _, x := range extFields(&l) {
				u(*x)
			}
		}
		for _, v := range [][]int64{l.W, l.B} {
			for _, x := range v {
				b.Write(binary.AppendVarint(nil, x))
			}
		}
	}
	return b.Bytes(), nil
}

// Parse decodes a model file. Every failure wraps ErrFormat and names the
// offset and field; the weights' values are never quoted.
func Parse(data []byte) (*Model, error) {
	r := &reader{b: data, kind: ErrFormat}
	if len(data) < len(magic) || string(data[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: not a kord model (bad magic)", ErrFormat)
	}
	r.off = len(magic)
	m := &Model{}
	n := r.uv("name length", maxName)
	if r.err == nil {
		if r.off+n > len(r.b) {
			r.fail("name", io.ErrUnexpectedEOF)
		} else {
			m.Name = string(r.b[r.off : r.off+n])
			r.off += n
		}
	}
	m.Ring = r.uv("ring", 64)
	m.Frac = r.uv("frac", 64)
	m.Input = Shape{r.uv("input channels", maxDim), r.uv("input height", maxDim), r.uv("input width", maxDim)}
	nl := r.uv("layer count", maxLayers)
	if r.err != nil {
		return nil, r.err
	}
	for i := 0; i < nl; i++ {
		if r.off >= len(r.b) {
			return nil, fmt.Errorf("%w: layer %d: %v", ErrFormat, i, io.ErrUnexpectedEOF)
		}
		l := Layer{Kind: Kind(r.b[r.off])}
		r.off++
		switch l.Kind {
		case FC:
			l.In, l.Out = r.uv("fc in", maxParams), r.uv("fc out", maxDim)
		case Conv:
			l.In, l.Out, l.K = r.uv("conv in", maxDim), r.uv("conv out", maxDim), r.uv("conv k", maxDim)
		case MaxPool:
			l.K = r.uv("maxpool k", maxDim)
		case Trunc:
			l.S = r.uv("trunc shift", 64)
		case ReLU, Flatten:
		default:
			fs := extFields(&l)
			if fs == nil {
				return nil, fmt.Errorf("%w: layer %d: unknown kind %d at offset %d", ErrFormat, i, l.Kind, r.off-1)
			}
			for j, x := range fs {
				*x = r.uv(fmt.Sprintf("%v field %d", l.Kind, j+1), maxDim)
			}
		}
		if r.err != nil {
			return nil, r.err
		}
		m.Layers = append(m.Layers, l)
		// Check the shapes so far before reading (and allocating) weights.
		if _, err := m.Shapes(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrFormat, err)
		}
		if l.Linear() {
			ll := &m.Layers[len(m.Layers)-1]
			ll.W = r.vs("weights", ll.weightLen())
			ll.B = r.vs("biases", ll.Out)
			if r.err != nil {
				return nil, fmt.Errorf("%w (layer %d)", r.err, i)
			}
		}
	}
	if r.off != len(r.b) {
		return nil, fmt.Errorf("%w: %d trailing bytes after the last layer", ErrFormat, len(r.b)-r.off)
	}
	if err := m.Validate(true); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return m, nil
}

// Load reads and parses a model file.
func Load(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("infer: %w", err)
	}
	m, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// reader reads a model file or a material encoding field by field; the
// first failure sticks, wraps kind (ErrFormat, ErrMaterialFormat) and
// names the field and its offset.
type reader struct {
	b    []byte
	off  int
	err  error
	kind error
}

func (r *reader) fail(field string, err error) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at offset %d: %w", r.kind, field, r.off, err)
	}
}

func (r *reader) uv(field string, limit int) int {
	if r.err != nil {
		return 0
	}
	x, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail(field, errors.New("truncated or malformed varint"))
		return 0
	}
	if x > uint64(limit) {
		r.fail(field, fmt.Errorf("value %d exceeds %d", x, limit))
		return 0
	}
	r.off += n
	return int(x)
}

func (r *reader) vs(field string, count int) []int64 {
	if r.err != nil {
		return nil
	}
	if count > len(r.b)-r.off { // each value takes at least one byte
		r.fail(field, fmt.Errorf("%d values announced, %d bytes left", count, len(r.b)-r.off))
		return nil
	}
	out := make([]int64, count)
	for i := range out {
		x, n := binary.Varint(r.b[r.off:])
		if n <= 0 {
			r.fail(field, errors.New("truncated or malformed varint"))
			return nil
		}
		out[i] = x
		r.off += n
	}
	return out
}
