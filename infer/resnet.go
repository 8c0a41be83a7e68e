package infer

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// ResNetConfig is the shape of a ResNet-18 (He et al., 2016): a 7×7/2
// stem convolution with padding 3, a 3×3/2 max-pool with padding 1, four
// stages of two basic blocks (two 3×3 convolutions with padding 1 and a
// residual addition; the first block of stages 2–4 has stride 2 and a
// 1×1/2 projection shortcut), a global average pool and a fully connected
// layer. Batch normalisation is folded into the convolutions (each has a
// bias; FoldBatchNorm). The ImageNet network is Side 224, Width 64,
// Classes 1000 (ResNet18ImageNet).
type ResNetConfig struct {
	Side    int // input height and width (3 channels)
	Width   int // channels of stage 1 (stages 2–4: 2×, 4×, 8×)
	Classes int
	Ring    int // ℓ (KORD: 32)
	Frac    int // f (KORD: 10)
}

// ResNet18ImageNet is KORD's ResNet-18 experiment: ImageNet shape, ℓ = 32,
// scale 10.
var ResNet18ImageNet = ResNetConfig{Side: 224, Width: 64, Classes: 1000, Ring: 32, Frac: 10}

// ResNetSeed is the fixed seed of the documented weights and input image
// (ResNetWeights, ResNetImage).
const ResNetSeed = 18

// ResNet18 returns the architecture (no weights) in kord's fixed point:
//
//	stem:  conv2d 3→w 7×7/2 pad 3, maxpool2d 3×3/2 pad 1, relu, trunc f
//	block: save 0, conv2d 3×3/s pad 1, trunc f, relu, conv2d 3×3 pad 1,
//	       trunc f, add 0, relu                                   (identity)
//	       save 0, conv2d 3×3/s pad 1, trunc f, relu, conv2d 3×3 pad 1,
//	       swap 0, conv2d 1×1/s, add 0, trunc f, relu             (projection)
//	head:  avgpool (global) s = 10, trunc 10, flatten, fc 8w→classes
//
// Weights carry f fractional bits and biases 2f, as everywhere in infer.
// The stem takes its ReLU after the max-pool, on a quarter of the values:
// with the pool's zero padding, ReLU(maxpool(x)) = maxpool(ReLU(x)) for
// every x whose window differences do not wrap (max is monotone and the
// padding 0 is ReLU's floor, so a padded window's max is already ≥ 0),
// which is torchvision's conv, relu, maxpool at 602,112 fewer ReLU
// comparisons for ImageNet shape (TestResNetStemReLUAfterPool). The
// reference evaluates this order as written, so the protocol stays
// bit-exact against it on the whole ring. It truncates after both (they
// commute with the arithmetic shift, and the pool leaves a quarter of the
// values); a
// projection block adds its two branches before their common truncation
// (both at 2f), so each block truncates its output once. The logits leave
// with 2f fractional bits.
func ResNet18(c ResNetConfig) (*Model, error) {
	if c.Side < 1 || c.Width < 1 || c.Classes < 1 {
		return nil, fmt.Errorf("infer: resnet18 %+v: side, width and classes must be positive", c)
	}
	f := c.Frac
	m := &Model{Name: c.Name(), Ring: c.Ring, Frac: f, Input: Shape{3, c.Side, c.Side}}
	add := func(ls ...Layer) { m.Layers = append(m.Layers, ls...) }
	add(Layer{Kind: Conv2D, In: 3, Out: c.Width, K: 7, Stride: 2, Pad: 3},
		Layer{Kind: MaxPool2D, K: 3, Stride: 2, Pad: 1},
		Layer{Kind: ReLU},
		Layer{Kind: Trunc, S: f})
	cin := c.Width
	for stage := 0; stage < 4; stage++ {
		cout := c.Width << uint(stage)
		for blk := 0; blk < 2; blk++ {
			stride := 1
			if stage > 0 && blk == 0 {
				stride = 2
			}
			conv1 := Layer{Kind: Conv2D, In: cin, Out: cout, K: 3, Stride: stride, Pad: 1}
			conv2 := Layer{Kind: Conv2D, In: cout, Out: cout, K: 3, Stride: 1, Pad: 1}
			if stride == 1 && cin == cout {
				add(Layer{Kind: Save}, conv1, Layer{Kind: Trunc, S: f}, Layer{Kind: ReLU},
					conv2, Layer{Kind: Trunc, S: f}, Layer{Kind: Add}, Layer{Kind: ReLU})
			} else {
				add(Layer{Kind: Save}, conv1, Layer{Kind: Trunc, S: f}, Layer{Kind: ReLU},
					conv2, Layer{Kind: Swap},
					Layer{Kind: Conv2D, In: cin, Out: cout, K: 1, Stride: stride},
					Layer{Kind: Add}, Layer{Kind: Trunc, S: f}, Layer{Kind: ReLU})
			}
			cin = cout
		}
	}
	shapes, err := m.Shapes()
	if err != nil {
		return nil, fmt.Errorf("infer: resnet18 %+v: %w", c, err)
	}
	last := shapes[len(shapes)-1]
	const avgShift = 10
	add(Layer{Kind: AvgPool, K: last.H, S: avgShift}, Layer{Kind: Trunc, S: avgShift},
		Layer{Kind: Flatten}, Layer{Kind: FC, In: last.C, Out: c.Classes})
	if _, err := m.Shapes(); err != nil {
		return nil, fmt.Errorf("infer: resnet18 %+v: %w", c, err)
	}
	return m, nil
}

// Name is "resnet18" for the ImageNet shape and
// "resnet18-s<side>-w<width>-c<classes>" otherwise (ℓ and f as given).
func (c ResNetConfig) Name() string {
	if c == ResNet18ImageNet {
		return "resnet18"
	}
	return fmt.Sprintf("resnet18-s%d-w%d-c%d", c.Side, c.Width, c.Classes)
}

// ParseResNetName reads a name of ResNetConfig.Name (ℓ = 32, f = 10).
func ParseResNetName(name string) (ResNetConfig, bool) {
	if name == "resnet18" {
		return ResNet18ImageNet, true
	}
	rest, ok := strings.CutPrefix(name, "resnet18-")
	if !ok {
		return ResNetConfig{}, false
	}
	c := ResNetConfig{Ring: 32, Frac: 10}
	for _, f := range strings.Split(rest, "-") {
		if len(f) < 2 {
			return ResNetConfig{}, false
		}
		v, err := strconv.Atoi(f[1:])
		if err != nil || v < 1 || v > 4096 {
			return ResNetConfig{}, false
		}
		switch f[0] {
		case 's':
			c.Side = v
		case 'w':
			c.Width = v
		case 'c':
			c.Classes = v
		default:
			return ResNetConfig{}, false
		}
	}
	if c.Side == 0 || c.Width == 0 || c.Classes == 0 {
		return ResNetConfig{}, false
	}
	return c, true
}

// ResNetWeights fills every linear layer of arch (a copy is returned)
// with weights drawn from seed (math/rand/v2 PCG(seed, 0x6b6f7264)), as a
// network with folded batch norm would have them: He-uniform weights
// (bound √(6/fan-in)), halved in the last convolution of every block and
// in the projection so that the residual sums keep their scale, and
// biases uniform in ±1/16; weights rounded to f fractional bits, biases
// to 2f. Activations then stay within a few units (RefStats.MaxAbs, docs).
func ResNetWeights(arch *Model, seed uint64) (*Model, error) {
	m := *arch
	m.Layers = append([]Layer(nil), arch.Layers...)
	if _, err := m.Shapes(); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, 0x6b6f7264))
	one := float64(int64(1) << uint(m.Frac))
	for i := range m.Layers {
		l := &m.Layers[i]
		if !l.Linear() {
			continue
		}
		fan := l.In
		if l.Kind != FC {
			fan = l.In * l.K * l.K
		}
		bound := math.Sqrt(6 / float64(fan))
		// the block's second convolution (followed by swap or trunc+add)
		// and the projection (followed by add)
		if i+1 < len(m.Layers) && (m.Layers[i+1].Kind == Swap || m.Layers[i+1].Kind == Add ||
			(i+2 < len(m.Layers) && m.Layers[i+1].Kind == Trunc && m.Layers[i+2].Kind == Add)) {
			bound /= 2
		}
		l.W = make([]int64, l.weightLen())
		for j := range l.W {
			l.W[j] = int64(math.Round((2*r.Float64() - 1) * bound * one))
		}
		l.B = make([]int64, l.Out)
		for j := range l.B {
			l.B[j] = int64(math.Round((2*r.Float64() - 1) / 16 * one * one))
		}
	}
	if err := m.Validate(true); err != nil {
		return nil, err
	}
	return &m, nil
}

// ResNetImage is the documented input: C·H·W values uniform in [−1, 1)
// (a normalised image's range) with f fractional bits, drawn from seed
// (PCG(seed, 0x696d6167)).
func ResNetImage(m *Model, seed uint64) []int64 {
	r := rand.New(rand.NewPCG(seed, 0x696d6167))
	one := int64(1) << uint(m.Frac)
	x := make([]int64, m.Input.Len())
	for i := range x {
		x[i] = r.Int64N(2*one) - one
	}
	return x
}

// ResNetModel returns the named ResNet (ParseResNetName) with the
// documented weights of ResNetSeed.
func ResNetModel(name string) (*Model, error) {
	c, ok := ParseResNetName(name)
	if !ok {
		return nil, fmt.Errorf("infer: %q is not a ResNet name (resnet18 or resnet18-s<side>-w<width>-c<classes>)", name)
	}
	arch, err := ResNet18(c)
	if err != nil {
		return nil, err
	}
	return ResNetWeights(arch, ResNetSeed)
}

// FoldBatchNorm folds an inference-mode batch norm
// y = γ·(x − μ)/√(σ² + ε) + β that follows a convolution with weights w
// ([co][…], len(w) = co·n) and bias b (nil: zero) into the convolution:
// w'[co][·] = w[co][·]·γ/√(σ²+ε), b' = (b − μ)·γ/√(σ²+ε) + β. The result
// is then rounded to fixed point (FixedPoint) for a Conv2D layer.
func FoldBatchNorm(w, b, gamma, beta, mean, variance []float64, eps float64) ([]float64, []float64, error) {
	co := len(gamma)
	if co == 0 || len(beta) != co || len(mean) != co || len(variance) != co || len(w)%co != 0 || (b != nil && len(b) != co) {
		return nil, nil, errors.New("infer: batch norm: γ, β, μ, σ² and the bias need one value per output channel, and the weights a multiple of it")
	}
	n := len(w) / co
	wo, bo := make([]float64, len(w)), make([]float64, co)
	for c := 0; c < co; c++ {
		if variance[c]+eps <= 0 {
			return nil, nil, fmt.Errorf("infer: batch norm: channel %d has σ² + ε ≤ 0", c)
		}
		s := gamma[c] / math.Sqrt(variance[c]+eps)
		for j := 0; j < n; j++ {
			wo[c*n+j] = w[c*n+j] * s
		}
		bias := 0.0
		if b != nil {
			bias = b[c]
		}
		bo[c] = (bias-mean[c])*s + beta[c]
	}
	return wo, bo, nil
}

// FixedPoint rounds real values to the integers round(v·2^frac).
func FixedPoint(v []float64, frac int) []int64 {
	out := make([]int64, len(v))
	s := math.Ldexp(1, frac)
	for i, x := range v {
		out[i] = int64(math.Round(x * s))
	}
	return out
}
