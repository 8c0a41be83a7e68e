package infer

import (
	"fmt"

	"github.com/kord-fss/kord/service"
)

// Lower returns the model the secure evaluation runs: every Conv2D with a
// stride or padding becomes a SpaceToDepth (a local permutation of the
// zero-padded input, so each party permutes its own shares) followed by a
// stride-1, unpadded Conv whose weights are the original ones rearranged
// (zeros where the rearranged kernel has no tap). Then every linear layer
// is one of the two shapes the modules' derived correlations know
// (msg.CorrMatVec, msg.CorrConv2D), and the masked-wire protocol of FC and
// Conv applies unchanged. With stride s and kernel k the stride-1 kernel
// has side ⌈k/s⌉ over C·p² channels, p = min(s, k):
//
//	W'[co][(ci·p+py)·p+px][qy][qx] = W[co][ci][qy·s+py][qx·s+px]  (0 when ≥ k)
//
// so out[oy] = Σ W'[q]·x'[oy+q] = Σ W[qy·s+py]·x[(oy+qy)·s+py−pad], the
// strided convolution. The cost: (p·⌈k/s⌉/k)² more weights and
// multiplications (64/49 for the 7×7/2 stem, 16/9 for 3×3/2, 1 for 1×1/2
// and every stride-1 layer), and the padding positions are opened under
// their masks like any input (they carry 0; opening 0 + R reveals only
// that mask's own words, used nowhere else). A Conv2D of stride 1 and no
// padding becomes a plain Conv. Other layers are copied. Weights are
// rearranged when present (the owner's model) and left nil otherwise
// (the client's architecture), so Lower(m).Arch() = Lower(m.Arch()).
func Lower(m *Model) (*Model, error) {
	shapes, err := m.Shapes()
	if err != nil {
		return nil, err
	}
	out := *m
	out.Layers = nil
	for i, l := range m.Layers {
		if l.Kind != Conv2D {
			out.Layers = append(out.Layers, l)
			continue
		}
		in, o := shapes[i], shapes[i+1]
		if l.Stride == 1 && l.Pad == 0 {
			l.Kind = Conv
			l.Stride = 0
			out.Layers = append(out.Layers, l)
			continue
		}
		s := l.Stride
		p := min(s, l.K)
		kq := (l.K + s - 1) / s
		s2d := Layer{Kind: SpaceToDepth, Stride: s, Pad: l.Pad, K: p, In: o.H + kq - 1, Out: o.W + kq - 1}
		conv := Layer{Kind: Conv, In: in.C * p * p, Out: l.Out, K: kq, B: l.B}
		if l.W != nil {
			conv.W = make([]int64, conv.weightLen())
			for co := 0; co < l.Out; co++ {
				for ci := 0; ci < l.In; ci++ {
					for py := 0; py < p; py++ {
						for px := 0; px < p; px++ {
							c2 := (ci*p+py)*p + px
							for qy := 0; qy < kq; qy++ {
								for qx := 0; qx < kq; qx++ {
									ky, kx := qy*s+py, qx*s+px
									if ky >= l.K || kx >= l.K {
										continue
									}
									conv.W[((co*conv.In+c2)*kq+qy)*kq+qx] = l.W[((co*l.In+ci)*l.K+ky)*l.K+kx]
								}
							}
						}
					}
				}
			}
		}
		out.Layers = append(out.Layers, s2d, conv)
	}
	if out.Layers, err = groupLinear(out.Layers); err != nil {
		return nil, fmt.Errorf("infer: lowering %s: %w", m.Name, err)
	}
	if len(out.Layers) > maxLayers {
		return nil, fmt.Errorf("infer: lowering %s gives %d layers, more than %d", m.Name, len(out.Layers), maxLayers)
	}
	ls, err := out.Shapes()
	if err != nil {
		return nil, fmt.Errorf("infer: lowering %s: %w", m.Name, err)
	}
	if ls[len(ls)-1] != shapes[len(shapes)-1] {
		return nil, fmt.Errorf("infer: lowering %s changed the output shape from %v to %v", m.Name, shapes[len(shapes)-1], ls[len(ls)-1])
	}
	return &out, nil
}

// MaxCorrWeights is the most weights one linear layer's correlation may
// have: a weight mask takes one module counter per weight, and the party
// daemons queue at most service.DefaultMaxPending counters (their
// --max-pending; a correlation request over it is refused, and the
// in-process host.LocalPair runs the same parties).
const MaxCorrWeights = service.DefaultMaxPending

// groupSlots are the residual slots Lower uses to split a linear layer:
// the layer's input, and the output channels made so far.
const groupIn, groupOut = 2, 3

// groupLinear splits every FC or Conv with more than MaxCorrWeights
// weights into G groups of output channels, each a layer of its own (its
// own weight mask and input correlation, so the input is opened once per
// group under that group's mask):
//
//	save 2, L_0, [save 3, load 2, L_g, concat 3] for g = 1 … G−1
//
// In C-major layout the concatenated outputs are exactly the layer's
// output. ResNet-18's four widest stage-4 convolutions (2.1 M and 2.4 M
// weights) become 3 or 4 groups each.
func groupLinear(ls []Layer) ([]Layer, error) {
	var out []Layer
	for _, l := range ls {
		n := l.weightLen()
		if (l.Kind != FC && l.Kind != Conv) || n <= MaxCorrWeights {
			out = append(out, l)
			continue
		}
		for _, o := range ls {
			if (o.Kind == Save || o.Kind == Swap || o.Kind == Add || o.Kind == Concat || o.Kind == LoadSlot) && (o.S == groupIn || o.S == groupOut) {
				return nil, fmt.Errorf("layer %v %d→%d has %d weights, over %d, and splitting it needs slots %d and %d, which the model uses", l.Kind, l.In, l.Out, n, MaxCorrWeights, groupIn, groupOut)
			}
		}
		row := n / l.Out
		if row > MaxCorrWeights {
			return nil, fmt.Errorf("layer %v %d→%d: one output channel has %d weights, over %d", l.Kind, l.In, l.Out, row, MaxCorrWeights)
		}
		per := MaxCorrWeights / row // channels per group
		groups := (l.Out + per - 1) / per
		per = (l.Out + groups - 1) / groups // even groups
		out = append(out, Layer{Kind: Save, S: groupIn})
		for g, lo := 0, 0; lo < l.Out; g, lo = g+1, lo+per {
			hi := min(l.Out, lo+per)
			part := l
			part.Out = hi - lo
			if l.W != nil {
				part.W = l.W[lo*row : hi*row]
			}
			if l.B != nil {
				part.B = l.B[lo:hi]
			}
			if g > 0 {
				out = append(out, Layer{Kind: Save, S: groupOut}, Layer{Kind: LoadSlot, S: groupIn})
			}
			out = append(out, part)
			if g > 0 {
				out = append(out, Layer{Kind: Concat, S: groupOut})
			}
		}
	}
	return out, nil
}
