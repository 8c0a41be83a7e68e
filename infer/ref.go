package infer

import (
	"errors"
	"fmt"
)

// mask returns 2^bits − 1 (all ones for 64).
func mask(bits int) uint64 {
	if bits >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(bits) - 1
}

// signed reads x mod 2^bits as a two's-complement integer.
func signed(x uint64, bits int) int64 {
	x &= mask(bits)
	if bits < 64 && x>>uint(bits-1) == 1 {
		return int64(x) - int64(1)<<uint(bits)
	}
	return int64(x)
}

// apply is the bilinear map of a linear layer over Z_{2^64} (callers mask
// to ℓ bits): FC y[o] = Σ_i w[o·In+i]·x[i]; Conv (stride 1, no padding)
// y[co][y][x] = Σ_{ci,ky,kx} w[co][ci][ky][kx]·x[ci][y+ky][x+kx]. in is
// the input shape. The result is added into y (len = output length).
func apply(l *Layer, in Shape, w, x, y []uint64) {
	switch l.Kind {
	case FC:
		for o := 0; o < l.Out; o++ {
			row := w[o*l.In : (o+1)*l.In]
			var acc uint64
			for i, v := range row {
				acc += v * x[i]
			}
			y[o] += acc
		}
	case Conv:
		oh, ow := in.H-l.K+1, in.W-l.K+1
		k := l.K
		for co := 0; co < l.Out; co++ {
			out := y[co*oh*ow : (co+1)*oh*ow]
			for ci := 0; ci < l.In; ci++ {
				plane := x[ci*in.H*in.W : (ci+1)*in.H*in.W]
				ker := w[(co*l.In+ci)*k*k : (co*l.In+ci+1)*k*k]
				for ky := 0; ky < k; ky++ {
					for kx := 0; kx < k; kx++ {
						wv := ker[ky*k+kx]
						if wv == 0 {
							continue
						}
						for yy := 0; yy < oh; yy++ {
							src := plane[(yy+ky)*in.W+kx : (yy+ky)*in.W+kx+ow]
							dst := out[yy*ow : yy*ow+ow]
							for xx := range dst {
								dst[xx] += wv * src[xx]
							}
						}
					}
				}
			}
		}
	}
}

// words converts signed integers to ring words mod 2^64.
func words(v []int64) []uint64 {
	out := make([]uint64, len(v))
	for i, x := range v {
		out[i] = uint64(x)
	}
	return out
}

// QuantizeImage maps 8-bit pixels to fixed point with frac fractional
// bits: x = round(p·2^frac/255), so 255 maps to exactly 1.0.
func QuantizeImage(pixels []byte, frac int) []int64 {
	out := make([]int64, len(pixels))
	for i, p := range pixels {
		out[i] = (int64(p)<<uint(frac) + 127) / 255
	}
	return out
}

// RefStats describes one cleartext evaluation.
type RefStats struct {
	// Overflow counts values (layer outputs and max-pool differences)
	// whose exact integer value did not fit the ring, i.e. where ring
	// arithmetic departs from integer arithmetic. Zero for an
	// overflow-free model on this input.
	Overflow int
	// MaxAbs is the largest |value| seen at any wire, before wrapping.
	MaxAbs int64
}

// ErrInput is wrapped by errors about an input of the wrong shape.
var ErrInput = errors.New("infer: input")

// Ref is the cleartext fixed-point reference, the truth the secure
// evaluation must equal bit for bit: it evaluates the model on a quantized
// input in Z_{2^ℓ} with exactly the semantics of the protocol — linear
// layers mod 2^ℓ, ReLU on the two's-complement sign, max-pool as the tree
// max(a, b) = b + ReLU(a − b) over each window in row-major order,
// truncation as the arithmetic shift of the signed value, Flatten as a
// no-op — and returns the output wire (the logits) as signed integers.
func (m *Model) Ref(x []int64) ([]int64, RefStats, error) {
	var st RefStats
	shapes, err := m.Shapes()
	if err != nil {
		return nil, st, err
	}
	if err := m.Validate(true); err != nil {
		return nil, st, err
	}
	if len(x) != m.Input.Len() {
		return nil, st, fmt.Errorf("%w: %d values, the model takes %v = %d", ErrInput, len(x), m.Input, m.Input.Len())
	}
	l := m.Ring
	lim := int64(1) << uint(min(l-1, 62))
	note := func(v int64) {
		a := v
		if a < 0 {
			a = -a
		}
		st.MaxAbs = max(st.MaxAbs, a)
		if l < 64 && (v >= lim || v < -lim) {
			st.Overflow++
		}
	}
	var slots [maxSlots][]int64
	cur := make([]int64, len(x))
	for i, v := range x {
		cur[i] = signed(uint64(v), l)
		if cur[i] != v {
			st.Overflow++
		}
	}
	for i := range m.Layers {
		ly := &m.Layers[i]
		in, out := shapes[i], shapes[i+1]
		switch ly.Kind {
		case FC, Conv:
			// exact in int64 for the overflow check (the models here keep
			// every product and sum far below 2^63), ring value for the truth
			y := make([]uint64, out.Len())
			for o := 0; o < ly.Out; o++ {
				b := uint64(ly.B[o])
				per := out.Len() / ly.Out
				for j := 0; j < per; j++ {
					y[o*per+j] = b
				}
			}
			apply(ly, in, words(ly.W), words(cur), y)
			exact := make([]int64, out.Len())
			if l < 64 {
				exactApply(ly, in, cur, exact)
			}
			next := make([]int64, len(y))
			for j := range y {
				next[j] = signed(y[j], l)
				if l < 64 {
					note(exact[j])
				}
			}
			cur = next
		case ReLU:
			for j, v := range cur {
				cur[j] = max(v, 0)
			}
		case Trunc:
			for j, v := range cur {
				cur[j] = v >> uint(ly.S)
			}
		case Flatten:
		case MaxPool:
			next := make([]int64, out.Len())
			for c := 0; c < out.C; c++ {
				for oy := 0; oy < out.H; oy++ {
					for ox := 0; ox < out.W; ox++ {
						win := make([]int64, 0, ly.K*ly.K)
						for ky := 0; ky < ly.K; ky++ {
							for kx := 0; kx < ly.K; kx++ {
								win = append(win, cur[(c*in.H+oy*ly.K+ky)*in.W+ox*ly.K+kx])
							}
						}
						next[(c*out.H+oy)*out.W+ox] = refPoolTree(win, l, note)
					}
				}
			}
			cur = next
		default:
			if cur, err = refExt(ly, in, out, cur, &slots, l, note); err != nil {
				return nil, st, fmt.Errorf("infer: layer %d (%v): %w", i, ly.Kind, err)
			}
		}
	}
	return cur, st, nil
}

// exactApply is apply over the integers plus the bias, for the overflow
// check (int64; the caller keeps ℓ < 64).
func exactApply(l *Layer, in Shape, x []int64, y []int64) {
	w := l.W
	switch l.Kind {
	case FC:
		for o := 0; o < l.Out; o++ {
			acc := l.B[o]
			for i, v := range w[o*l.In : (o+1)*l.In] {
				acc += v * x[i]
			}
			y[o] = acc
		}
	case Conv:
		oh, ow := in.H-l.K+1, in.W-l.K+1
		k := l.K
		for co := 0; co < l.Out; co++ {
			for yy := 0; yy < oh; yy++ {
				for xx := 0; xx < ow; xx++ {
					acc := l.B[co]
					for ci := 0; ci < l.In; ci++ {
						for ky := 0; ky < k; ky++ {
							for kx := 0; kx < k; kx++ {
								acc += w[((co*l.In+ci)*k+ky)*k+kx] * x[(ci*in.H+yy+ky)*in.W+xx+kx]
							}
						}
					}
					y[(co*oh+yy)*ow+xx] = acc
				}
			}
		}
	}
}

// Argmax returns the index of the largest value (the first on ties).
func Argmax(v []int64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}
