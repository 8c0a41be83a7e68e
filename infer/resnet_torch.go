package infer

import (
	"fmt"
	"strings"
)

// ResNetFromTorch builds the ResNet-18 of c from real weights named as in
// torchvision's resnet18 state dict, each a flat row-major []float64:
// conv1.weight, bn1.{weight,bias,running_mean,running_var},
// layerS.B.conv{1,2}.weight and layerS.B.bn{1,2}.* (S = 1..4, B = 0, 1),
// layerS.0.downsample.{0.weight,1.*} (S = 2..4), fc.weight, fc.bias. Each
// batch norm (with eps, torchvision: 1e-5) is folded into the convolution
// before it (FoldBatchNorm), then weights are rounded to c.Frac fractional
// bits and biases to 2·c.Frac (FixedPoint). The result is an ordinary
// model: Marshal writes it as a kord-infer-model file that `kord infer
// demo --model resnet18 --file F` loads. A missing tensor or one of the
// wrong size is an error naming it.
func ResNetFromTorch(c ResNetConfig, params map[string][]float64, eps float64) (*Model, error) {
	m, err := ResNet18(c)
	if err != nil {
		return nil, err
	}
	// the linear layers in model order, with their tensors' prefixes
	var names [][2]string // conv weight, bn prefix ("" for fc)
	names = append(names, [2]string{"conv1.weight", "bn1"})
	for s := 1; s <= 4; s++ {
		for b := 0; b < 2; b++ {
			p := fmt.Sprintf("layer%d.%d.", s, b)
			names = append(names, [2]string{p + "conv1.weight", p + "bn1"}, [2]string{p + "conv2.weight", p + "bn2"})
			if s > 1 && b == 0 {
				names = append(names, [2]string{p + "downsample.0.weight", p + "downsample.1"})
			}
		}
	}
	names = append(names, [2]string{"fc.weight", ""})
	get := func(name string, n int) ([]float64, error) {
		v, ok := params[name]
		if !ok {
			return nil, fmt.Errorf("infer: torch weights: %s is missing", name)
		}
		if len(v) != n {
			return nil, fmt.Errorf("infer: torch weights: %s has %d values, want %d", name, len(v), n)
		}
		return v, nil
	}
	at := 0
	for i := range m.Layers {
		l := &m.Layers[i]
		if !l.Linear() {
			continue
		}
		if at >= len(names) {
			return nil, fmt.Errorf("infer: torch weights: the model has more linear layers than resnet18's %d", len(names))
		}
		wn, bn := names[at][0], names[at][1]
		at++
		w, err := get(wn, l.weightLen())
		if err != nil {
			return nil, err
		}
		var b []float64
		if bn == "" {
			if b, err = get(strings.TrimSuffix(wn, "weight")+"bias", l.Out); err != nil {
				return nil, err
			}
		} else {
			var bnv [4][]float64
			for j, f := range []string{"weight", "bias", "running_mean", "running_var"} {
				if bnv[j], err = get(bn+"."+f, l.Out); err != nil {
					return nil, err
				}
			}
			if w, b, err = FoldBatchNorm(w, nil, bnv[0], bnv[1], bnv[2], bnv[3], eps); err != nil {
				return nil, fmt.Errorf("%s: %w", bn, err)
			}
		}
		l.W, l.B = FixedPoint(w, c.Frac), FixedPoint(b, 2*c.Frac)
	}
	if at != len(names) {
		return nil, fmt.Errorf("infer: torch weights: the model has %d linear layers, resnet18 %d", at, len(names))
	}
	if err := m.Validate(true); err != nil {
		return nil, fmt.Errorf("infer: torch weights: %w", err)
	}
	return m, nil
}
