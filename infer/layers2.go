package infer

import (
	"errors"
	"fmt"
)

// Layers beyond the feed-forward MNIST set, for residual networks
// (ResNet-18, resnet.go). They are part of the model file format (kinds 7
// to 13, each followed by its uvarint fields in the order below):
//
//   - Conv2D (7): in, out, k, stride, pad; then out·in·k·k weights
//     [co][ci][kh][kw] and out biases, as Conv. Zero padding of pad on
//     every side; output side ⌊(H + 2·pad − k)/stride⌋ + 1.
//     y[co][oy][ox] = B[co] + Σ W[co][ci][ky][kx]·x[ci][oy·stride+ky−pad][ox·stride+kx−pad]
//     (out-of-range inputs are 0).
//   - MaxPool2D (8): k, stride, pad. Windows as Conv2D's, padding values
//     0 (the same as −∞ on a ReLU output, which is where ResNet pools),
//     taken separably: first along rows, h[c][y][ox] = max over kx of
//     x[c][y][ox·stride+kx−pad] for every input row y, then along
//     columns, out[c][oy][ox] = max over ky of h[c][oy·stride+ky−pad][ox];
//     each max of k values is MaxPool's tree max(a, b) = b + ReLU(a − b),
//     pairwise per level in index order. (k−1)·(C·H·W' + C·H'·W')
//     comparisons instead of (k²−1)·C·H'·W' for the whole windows: 25%
//     fewer for ResNet's 3×3/2 pool, in the same number of rounds.
//   - AvgPool (9): k, s. k×k windows, stride k, no padding; the output is
//     Σ(window)·c mod 2^ℓ with the public c = round(2^s/k²) (at least 1).
//     It is exact and local; the model follows it with Trunc s, so the
//     average is ⌊Σ·c / 2^s⌋ (for ResNet's 7×7 window and s = 10: c = 21,
//     21/1024 = 1/48.76 instead of 1/49, documented in docs/inference.md).
//   - Save (10), Swap (11), Add (12): slot s (0..3). Save copies the wire
//     into the slot; Swap exchanges the wire and the slot; Add adds the
//     slot to the wire (mod 2^ℓ; the shapes must agree). A residual block
//     is Save, the main branch, [Swap, the projection,] Add: every one is
//     local on additive shares (no round, no key).
//   - Concat (14), LoadSlot (15): slot s. Concat puts the slot's channels
//     before the wire's (the slot and the wire have the same height and
//     width; C-major layout makes this the slot's values followed by the
//     wire's); LoadSlot replaces the wire by a copy of the slot. Lower uses
//     them to split a linear layer into output-channel groups.
//   - SpaceToDepth (13): stride, pad, p, hq, wq. The zero-padded input
//     rearranged so that a strided convolution becomes a stride-1 one:
//     out[ci·p²+py·p+px][qy][qx] = x[ci][qy·stride+py−pad][qx·stride+px−pad]
//     (0 out of range), shape (C·p², hq, wq). Lower (lower.go) emits it
//     before the stride-1 Conv it turns a Conv2D into; it is a local
//     permutation of shares.
const (
	Conv2D       Kind = 7
	MaxPool2D    Kind = 8
	AvgPool      Kind = 9
	Save         Kind = 10
	Swap         Kind = 11
	Add          Kind = 12
	SpaceToDepth Kind = 13
	Concat       Kind = 14
	LoadSlot     Kind = 15
)

// maxSlots is the number of residual slots.
const maxSlots = 4

func extName(k Kind) string {
	switch k {
	case Conv2D:
		return "conv2d"
	case MaxPool2D:
		return "maxpool2d"
	case AvgPool:
		return "avgpool"
	case Save:
		return "save"
	case Swap:
		return "swap"
	case Add:
		return "add"
	case SpaceToDepth:
		return "s2d"
	case Concat:
		return "concat"
	case LoadSlot:
		return "load"
	}
	return ""
}

// extFields lists the uvarint fields of a kind 7..13 layer in file order,
// or nil for another kind.
func extFields(l *Layer) []*int {
	switch l.Kind {
	case Conv2D:
		return []*int{&l.In, &l.Out, &l.K, &l.Stride, &l.Pad}
	case MaxPool2D:
		return []*int{&l.K, &l.Stride, &l.Pad}
	case AvgPool:
		return []*int{&l.K, &l.S}
	case Save, Swap, Add, Concat, LoadSlot:
		return []*int{&l.S}
	case SpaceToDepth:
		return []*int{&l.Stride, &l.Pad, &l.K, &l.In, &l.Out}
	}
	return nil
}

// windowOut is the output side of a k-window at stride and pad on side n,
// or -1 when the window does not fit.
func windowOut(n, k, stride, pad int) int {
	if k < 1 || stride < 1 || pad < 0 || pad >= k || n+2*pad < k {
		return -1
	}
	return (n+2*pad-k)/stride + 1
}

// avgMul is AvgPool's multiplier round(2^s/k²).
func avgMul(k, s int) uint64 {
	n := uint64(k * k)
	return (uint64(1)<<uint(s) + n/2) / n
}

// shapeExt is Shapes for kinds 7..13: the output shape of l on input s,
// with the residual slots' shapes.
func shapeExt(l *Layer, s Shape, ring int, slots *[maxSlots]Shape) (Shape, error) {
	switch l.Kind {
	case Conv2D, MaxPool2D:
		if l.Stride > maxDim || l.Pad > maxDim || l.K > maxDim {
			return s, fmt.Errorf("%v k=%d stride=%d pad=%d is out of range", l.Kind, l.K, l.Stride, l.Pad)
		}
		oh, ow := windowOut(s.H, l.K, l.Stride, l.Pad), windowOut(s.W, l.K, l.Stride, l.Pad)
		if oh < 1 || ow < 1 {
			return s, fmt.Errorf("%v k=%d stride=%d pad=%d does not take a %v input (need k ≥ 1, stride ≥ 1, pad < k)", l.Kind, l.K, l.Stride, l.Pad, s)
		}
		if l.Kind == MaxPool2D {
			return Shape{s.C, oh, ow}, nil
		}
		if l.In != s.C || l.Out < 1 || l.Out > maxDim {
			return s, fmt.Errorf("conv2d %d→%d does not take a %v input", l.In, l.Out, s)
		}
		return Shape{l.Out, oh, ow}, nil
	case AvgPool:
		if l.K < 1 || l.K > s.H || l.K > s.W || l.S < 0 || l.S > ring-2 || avgMul(l.K, l.S) < 1 {
			return s, fmt.Errorf("avgpool k=%d s=%d does not take a %v input in a %d-bit ring (need 1 ≤ k ≤ side, round(2^s/k²) ≥ 1, s ≤ ℓ−2)", l.K, l.S, s, ring)
		}
		return Shape{s.C, s.H / l.K, s.W / l.K}, nil
	case Save, Swap, Add, Concat, LoadSlot:
		if l.S < 0 || l.S >= maxSlots {
			return s, fmt.Errorf("%v slot %d is outside 0..%d", l.Kind, l.S, maxSlots-1)
		}
		slot := &slots[l.S]
		switch l.Kind {
		case Save:
			*slot = s
		case Swap:
			if slot.Len() == 0 {
				return s, fmt.Errorf("swap with empty slot %d", l.S)
			}
			s, *slot = *slot, s
		case Add:
			if *slot != s {
				return s, fmt.Errorf("add of slot %d (%v) to a %v wire", l.S, *slot, s)
			}
		case Concat:
			if slot.Len() == 0 || slot.H != s.H || slot.W != s.W || slot.C+s.C > maxDim {
				return s, fmt.Errorf("concat of slot %d (%v) before a %v wire", l.S, *slot, s)
			}
			s = Shape{slot.C + s.C, s.H, s.W}
		case LoadSlot:
			if slot.Len() == 0 {
				return s, fmt.Errorf("load of empty slot %d", l.S)
			}
			s = *slot
		}
		return s, nil
	case SpaceToDepth:
		st, p := l.Stride, l.K
		if st < 1 || st > 64 || p < 1 || p > st || l.Pad < 0 || l.Pad > maxDim || l.In < 1 || l.Out < 1 ||
			(l.In-1)*st > s.H+2*l.Pad || (l.Out-1)*st > s.W+2*l.Pad {
			return s, fmt.Errorf("s2d stride=%d pad=%d p=%d to %d×%d does not take a %v input", st, l.Pad, p, l.In, l.Out, s)
		}
		o := Shape{s.C * p * p, l.In, l.Out}
		if o.C > maxDim || o.Len() > maxParams {
			return s, fmt.Errorf("s2d output %v is too large", o)
		}
		return o, nil
	}
	return s, fmt.Errorf("unknown layer kind %d", l.Kind)
}

// poolWindows returns, for each output of a k×k window at stride and pad
// (row-major over (c, oy, ox)), the input indices of its k² values in
// row-major order, -1 for padding.
func poolWindows(in, out Shape, k, stride, pad int) []int32 {
	idx := make([]int32, 0, out.Len()*k*k)
	for c := 0; c < out.C; c++ {
		for oy := 0; oy < out.H; oy++ {
			for ox := 0; ox < out.W; ox++ {
				for ky := 0; ky < k; ky++ {
					for kx := 0; kx < k; kx++ {
						y, x := oy*stride+ky-pad, ox*stride+kx-pad
						if y < 0 || y >= in.H || x < 0 || x >= in.W {
							idx = append(idx, -1)
						} else {
							idx = append(idx, int32((c*in.H+y)*in.W+x))
						}
					}
				}
			}
		}
	}
	return idx
}

// poolPass is one reduction of a max-pool: n windows of k values each,
// idx[j·k+t] the index of window j's value t in the previous pass's
// output (-1: the padding value 0), each reduced by the tree.
type poolPass struct {
	k, n int
	idx  []int32
}

// poolPasses returns the passes of a max-pool layer (MaxPool: one pass
// over whole K×K windows; MaxPool2D: rows, then columns). Ref and the
// secure evaluation share them.
func poolPasses(l *Layer, in, out Shape) []poolPass {
	if l.Kind == MaxPool {
		return []poolPass{{k: l.K * l.K, n: out.Len(), idx: poolWindows(in, out, l.K, l.K, 0)}}
	}
	k, st, pad := l.K, l.Stride, l.Pad
	// rows: h[c][y][ox], every input row
	h := Shape{in.C, in.H, out.W}
	rows := make([]int32, 0, h.Len()*k)
	for c := 0; c < in.C; c++ {
		for y := 0; y < in.H; y++ {
			for ox := 0; ox < out.W; ox++ {
				for kx := 0; kx < k; kx++ {
					if x := ox*st + kx - pad; x < 0 || x >= in.W {
						rows = append(rows, -1)
					} else {
						rows = append(rows, int32((c*in.H+y)*in.W+x))
					}
				}
			}
		}
	}
	cols := make([]int32, 0, out.Len()*k)
	for c := 0; c < out.C; c++ {
		for oy := 0; oy < out.H; oy++ {
			for ox := 0; ox < out.W; ox++ {
				for ky := 0; ky < k; ky++ {
					if y := oy*st + ky - pad; y < 0 || y >= in.H {
						cols = append(cols, -1)
					} else {
						cols = append(cols, int32((c*h.H+y)*h.W+ox))
					}
				}
			}
		}
	}
	return []poolPass{{k: k, n: h.Len(), idx: rows}, {k: k, n: out.Len(), idx: cols}}
}

// poolComparisons is the number of max operations of each tree level of
// each pass of a max-pool layer, in evaluation order.
func poolComparisons(l *Layer, in, out Shape) [][]int {
	var out2 [][]int
	add := func(k, n int) {
		var lv []int
		for _, m := range poolLevels(k) {
			lv = append(lv, m*n)
		}
		out2 = append(out2, lv)
	}
	if l.Kind == MaxPool {
		add(l.K*l.K, out.Len())
	} else {
		add(l.K, in.C*in.H*out.W)
		add(l.K, out.Len())
	}
	return out2
}

// s2dIndex returns, for each output of a SpaceToDepth layer, its input
// index or -1 (padding).
func s2dIndex(l *Layer, in, out Shape) []int32 {
	p, st := l.K, l.Stride
	idx := make([]int32, out.Len())
	for ci := 0; ci < in.C; ci++ {
		for py := 0; py < p; py++ {
			for px := 0; px < p; px++ {
				oc := (ci*p+py)*p + px
				for qy := 0; qy < out.H; qy++ {
					for qx := 0; qx < out.W; qx++ {
						y, x := qy*st+py-l.Pad, qx*st+px-l.Pad
						j := (oc*out.H+qy)*out.W + qx
						if y < 0 || y >= in.H || x < 0 || x >= in.W {
							idx[j] = -1
						} else {
							idx[j] = int32((ci*in.H+y)*in.W + x)
						}
					}
				}
			}
		}
	}
	return idx
}

// gather returns v[idx[j]] for each j (zero for -1).
func gather[T int64 | uint64](v []T, idx []int32) []T {
	out := make([]T, len(idx))
	for j, i := range idx {
		if i >= 0 {
			out[j] = v[i]
		}
	}
	return out
}

// refPoolTree reduces one window by the tree max(a, b) = b + ReLU(a − b),
// pairwise per level, in Z_{2^ring} read as signed; note sees each exact
// difference.
func refPoolTree(win []int64, ring int, note func(int64)) int64 {
	for len(win) > 1 {
		nw := win[:0:0]
		for p := 0; p+1 < len(win); p += 2 {
			a, b := win[p], win[p+1]
			note(a - b)
			d := signed(uint64(a-b), ring)
			nw = append(nw, signed(uint64(b+max(d, 0)), ring))
		}
		if len(win)%2 == 1 {
			nw = append(nw, win[len(win)-1])
		}
		win = nw
	}
	return win[0]
}

// errSlot is returned when a model's slots do not hold what a layer needs
// (Shapes rejects such models; this guards the evaluators).
var errSlot = errors.New("residual slot empty or of the wrong length")

// refExt is Ref for kinds 7..13 on the signed wire cur (values of the
// ring read as signed); note sees every exact value before it wraps.
func refExt(ly *Layer, in, out Shape, cur []int64, slots *[maxSlots][]int64, ring int, note func(int64)) ([]int64, error) {
	switch ly.Kind {
	case Conv2D:
		y := make([]int64, out.Len())
		refConv2D(ly, in, out, cur, y)
		for j, v := range y {
			note(v)
			y[j] = signed(uint64(v), ring)
		}
		return y, nil
	case MaxPool2D:
		y := cur
		for _, ps := range poolPasses(ly, in, out) {
			vals := gather(y, ps.idx)
			y = make([]int64, ps.n)
			for j := range y {
				y[j] = refPoolTree(vals[j*ps.k:(j+1)*ps.k], ring, note)
			}
		}
		return y, nil
	case AvgPool:
		c := int64(avgMul(ly.K, ly.S))
		idx := poolWindows(in, out, ly.K, ly.K, 0)
		vals := gather(cur, idx)
		kk := ly.K * ly.K
		y := make([]int64, out.Len())
		for j := range y {
			var sum int64
			for _, v := range vals[j*kk : (j+1)*kk] {
				sum += v
			}
			note(sum * c)
			y[j] = signed(uint64(sum*c), ring)
		}
		return y, nil
	case Save:
		slots[ly.S] = append([]int64(nil), cur...)
		return cur, nil
	case Swap:
		if slots[ly.S] == nil {
			return nil, errSlot
		}
		s := slots[ly.S]
		slots[ly.S] = cur
		return s, nil
	case Add:
		s := slots[ly.S]
		if len(s) != len(cur) {
			return nil, errSlot
		}
		y := make([]int64, len(cur))
		for j := range y {
			note(cur[j] + s[j])
			y[j] = signed(uint64(cur[j]+s[j]), ring)
		}
		return y, nil
	case Concat:
		if slots[ly.S] == nil {
			return nil, errSlot
		}
		return append(append([]int64(nil), slots[ly.S]...), cur...), nil
	case LoadSlot:
		if slots[ly.S] == nil {
			return nil, errSlot
		}
		return append([]int64(nil), slots[ly.S]...), nil
	case SpaceToDepth:
		return gather(cur, s2dIndex(ly, in, out)), nil
	}
	return nil, fmt.Errorf("unknown layer kind %d", ly.Kind)
}

// refConv2D is the strided, padded convolution over the integers (int64,
// wrapping mod 2^64, which agrees with the ring mod 2^ℓ), bias included,
// written directly from its definition (not through the lowering, so that
// the bit-exact tests check Lower too).
func refConv2D(l *Layer, in, out Shape, x, y []int64) {
	k, st, pad := l.K, l.Stride, l.Pad
	for co := 0; co < l.Out; co++ {
		dst := y[co*out.H*out.W : (co+1)*out.H*out.W]
		for j := range dst {
			dst[j] = l.B[co]
		}
		for ci := 0; ci < l.In; ci++ {
			plane := x[ci*in.H*in.W : (ci+1)*in.H*in.W]
			for ky := 0; ky < k; ky++ {
				for kx := 0; kx < k; kx++ {
					w := l.W[((co*l.In+ci)*k+ky)*k+kx]
					if w == 0 {
						continue
					}
					// ox with 0 ≤ ox·st + kx − pad < in.W
					if in.W-1+pad-kx < 0 {
						continue
					}
					lo := max(0, (pad-kx+st-1)/st)
					hi := min(out.W, (in.W-1+pad-kx)/st+1)
					for oy := 0; oy < out.H; oy++ {
						iy := oy*st + ky - pad
						if iy < 0 || iy >= in.H || lo >= hi {
							continue
						}
						row := plane[iy*in.W : (iy+1)*in.W]
						d := dst[oy*out.W : (oy+1)*out.W]
						for ox := lo; ox < hi; ox++ {
							d[ox] += w * row[ox*st+kx-pad]
						}
					}
				}
			}
		}
	}
}
