// Package train trains the two MNIST models of kord's private-inference
// demonstration in floating point and quantizes them to infer.Model fixed
// point. It exists so that the committed weights (infer/testdata) can be
// reproduced with one command, `kord infer train --model mlp|cnn`; it is
// not a general training library.
//
// The models:
//
//   - "mlp": the P-SecureML network 784-128-128-10 with ReLU.
//   - "cnn": a LeNet-style network after MiniONN's MNIST model: conv 5×5
//     1→8, 2×2 max-pool, ReLU, conv 5×5 8→16, 2×2 max-pool, ReLU,
//     fully connected 256→100, ReLU, 100→10.
//
// Training is plain per-example SGD with a step-decayed learning rate,
// cross-entropy on the softmax, He-normal initialisation and a seeded
// shuffle, single-threaded so the result is a function of the seed (on one
// architecture: Go may fuse multiply-adds on some non-amd64 targets).
//
// Quantization: weights round(w·2^f), biases round(b·2^{2f}) (they are
// added to products of two f-bit values), and a truncation by f after
// every linear layer but the last, placed after the layer's max-pool and
// ReLU so that fewer values are truncated (truncation commutes with both).
// The logits leave at scale 2^{2f}.
package train

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/kord-fss/kord/infer"
)

// Config is one training run.
type Config struct {
	Model  string  // "mlp" or "cnn"
	Epochs int     // passes over the 60,000 training images
	Seed   uint64  // initialisation and shuffle
	LR     float64 // initial learning rate; halved every epoch
	Ring   int     // ℓ of the fixed-point model
	Frac   int     // f
	// Limit, when > 0, uses only the first Limit training images per epoch
	// (for quick tests).
	Limit int
	// Log receives one progress line per epoch; nil discards.
	Log io.Writer
}

// DefaultConfig returns the configuration that produced the committed
// weights.
func DefaultConfig(model string) Config {
	c := Config{Model: model, Epochs: 2, Seed: 1, LR: 0.01, Ring: 32, Frac: 8}
	if model == "cnn" {
		c.Epochs = 1
	}
	return c
}

// Net is a float network: layers in the order of the fixed-point model
// (Trunc layers are absent).
type Net struct {
	Layers []infer.Layer // shapes only; weights live in w and b
	input  infer.Shape
	sh     []infer.Shape // input shape of every layer, then the output's
	w, b   [][]float64   // per layer (nil for non-linear)
}

// NewNet builds the architecture with He-normal weights.
func NewNet(model string, seed uint64) (*Net, error) {
	var ls []infer.Layer
	switch model {
	case "mlp":
		ls = []infer.Layer{
			{Kind: infer.FC, In: 784, Out: 128}, {Kind: infer.ReLU},
			{Kind: infer.FC, In: 128, Out: 128}, {Kind: infer.ReLU},
			{Kind: infer.FC, In: 128, Out: 10},
		}
	case "cnn":
		ls = []infer.Layer{
			{Kind: infer.Conv, In: 1, Out: 8, K: 5}, {Kind: infer.MaxPool, K: 2}, {Kind: infer.ReLU},
			{Kind: infer.Conv, In: 8, Out: 16, K: 5}, {Kind: infer.MaxPool, K: 2}, {Kind: infer.ReLU},
			{Kind: infer.Flatten},
			{Kind: infer.FC, In: 256, Out: 100}, {Kind: infer.ReLU},
			{Kind: infer.FC, In: 100, Out: 10},
		}
	default:
		return nil, fmt.Errorf("train: unknown model %q (mlp or cnn)", model)
	}
	n := &Net{Layers: ls, input: infer.Shape{C: 1, H: 28, W: 28}}
	if model == "mlp" {
		n.input = infer.Shape{C: 784, H: 1, W: 1}
	}
	sh, err := (&infer.Model{Ring: 64, Frac: 0, Input: n.input, Layers: ls}).Shapes()
	if err != nil {
		return nil, fmt.Errorf("train: built-in architecture %q: %w", model, err)
	}
	n.sh = sh
	r := rand.New(rand.NewPCG(seed, 0x6b6f7264))
	for _, l := range ls {
		var w, b []float64
		if l.Linear() {
			fanIn := l.In
			cnt := l.In * l.Out
			if l.Kind == infer.Conv {
				fanIn = l.In * l.K * l.K
				cnt = l.Out * fanIn
			}
			sd := math.Sqrt(2 / float64(fanIn))
			w = make([]float64, cnt)
			for i := range w {
				w[i] = r.NormFloat64() * sd
			}
			b = make([]float64, l.Out)
		}
		n.w = append(n.w, w)
		n.b = append(n.b, b)
	}
	return n, nil
}

func (n *Net) shapes() []infer.Shape { return n.sh }

// pass holds one example's activations for the backward pass.
type pass struct {
	acts [][]float64 // input of every layer, then the output
	arg  [][]int     // max-pool argmax per layer
}

func (n *Net) forward(x []float64, sh []infer.Shape) *pass {
	p := &pass{acts: [][]float64{x}, arg: make([][]int, len(n.Layers))}
	cur := x
	for i, l := range n.Layers {
		in, out := sh[i], sh[i+1]
		y := make([]float64, out.Len())
		switch l.Kind {
		case infer.FC:
			w := n.w[i]
			for o := 0; o < l.Out; o++ {
				s := n.b[i][o]
				row := w[o*l.In : (o+1)*l.In]
				for j, v := range row {
					s += v * cur[j]
				}
				y[o] = s
			}
		case infer.Conv:
			convF(l, in, n.w[i], n.b[i], cur, y)
		case infer.ReLU:
			for j, v := range cur {
				y[j] = max(v, 0)
			}
		case infer.MaxPool:
			arg := make([]int, out.Len())
			for c := 0; c < out.C; c++ {
				for oy := 0; oy < out.H; oy++ {
					for ox := 0; ox < out.W; ox++ {
						best := -1
						for ky := 0; ky < l.K; ky++ {
							for kx := 0; kx < l.K; kx++ {
								j := (c*in.H+oy*l.K+ky)*in.W + ox*l.K + kx
								if best < 0 || cur[j] > cur[best] {
									best = j
								}
							}
						}
						o := (c*out.H+oy)*out.W + ox
						arg[o], y[o] = best, cur[best]
					}
				}
			}
			p.arg[i] = arg
		case infer.Flatten:
			copy(y, cur)
		}
		p.acts = append(p.acts, y)
		cur = y
	}
	return p
}

func convF(l infer.Layer, in infer.Shape, w, b, x, y []float64) {
	oh, ow, k := in.H-l.K+1, in.W-l.K+1, l.K
	for co := 0; co < l.Out; co++ {
		out := y[co*oh*ow : (co+1)*oh*ow]
		for j := range out {
			out[j] = b[co]
		}
		for ci := 0; ci < l.In; ci++ {
			plane := x[ci*in.H*in.W:]
			for ky := 0; ky < k; ky++ {
				for kx := 0; kx < k; kx++ {
					wv := w[((co*l.In+ci)*k+ky)*k+kx]
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

// step backpropagates the softmax cross-entropy of one example and
// applies SGD with learning rate lr.
func (n *Net) step(p *pass, label int, lr float64, sh []infer.Shape) {
	logits := p.acts[len(p.acts)-1]
	g := softmax(logits)
	g[label]--
	for i := len(n.Layers) - 1; i >= 0; i-- {
		l := n.Layers[i]
		in, out := sh[i], sh[i+1]
		x := p.acts[i]
		gx := make([]float64, in.Len())
		switch l.Kind {
		case infer.FC:
			w := n.w[i]
			for o := 0; o < l.Out; o++ {
				go_ := g[o]
				if go_ == 0 {
					continue
				}
				row := w[o*l.In : (o+1)*l.In]
				for j := range row {
					gx[j] += row[j] * go_
					row[j] -= lr * go_ * x[j]
				}
				n.b[i][o] -= lr * go_
			}
		case infer.Conv:
			oh, ow, k := in.H-l.K+1, in.W-l.K+1, l.K
			w := n.w[i]
			for co := 0; co < l.Out; co++ {
				gout := g[co*oh*ow : (co+1)*oh*ow]
				var gb float64
				for _, v := range gout {
					gb += v
				}
				for ci := 0; ci < l.In; ci++ {
					plane := x[ci*in.H*in.W:]
					gplane := gx[ci*in.H*in.W:]
					for ky := 0; ky < k; ky++ {
						for kx := 0; kx < k; kx++ {
							wi := ((co*l.In+ci)*k+ky)*k + kx
							wv := w[wi]
							var gw float64
							for yy := 0; yy < oh; yy++ {
								src := plane[(yy+ky)*in.W+kx : (yy+ky)*in.W+kx+ow]
								gsrc := gplane[(yy+ky)*in.W+kx : (yy+ky)*in.W+kx+ow]
								gd := gout[yy*ow : yy*ow+ow]
								for xx, d := range gd {
									gw += d * src[xx]
									gsrc[xx] += d * wv
								}
							}
							w[wi] -= lr * gw
						}
					}
				}
				n.b[i][co] -= lr * gb
			}
		case infer.ReLU:
			for j, v := range x {
				if v > 0 {
					gx[j] = g[j]
				}
			}
		case infer.MaxPool:
			for o := 0; o < out.Len(); o++ {
				gx[p.arg[i][o]] += g[o]
			}
		case infer.Flatten:
			copy(gx, g)
		}
		g = gx
	}
}

func softmax(v []float64) []float64 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	out := make([]float64, len(v))
	var s float64
	for i, x := range v {
		out[i] = math.Exp(x - m)
		s += out[i]
	}
	for i := range out {
		out[i] /= s
	}
	return out
}

func pixels(img []byte) []float64 {
	x := make([]float64, len(img))
	for i, p := range img {
		x[i] = float64(p) / 255
	}
	return x
}

// Train runs the configured SGD on the training set.
func Train(c Config, train *infer.MNIST) (*Net, error) {
	if c.Epochs < 1 || c.LR <= 0 {
		return nil, errors.New("train: need at least one epoch and a positive learning rate")
	}
	n, err := NewNet(c.Model, c.Seed)
	if err != nil {
		return nil, err
	}
	sh := n.shapes()
	r := rand.New(rand.NewPCG(c.Seed, 0x73687566))
	count := len(train.Images)
	if c.Limit > 0 && c.Limit < count {
		count = c.Limit
	}
	lr := c.LR
	for e := 0; e < c.Epochs; e++ {
		order := r.Perm(count)
		var loss float64
		for _, i := range order {
			p := n.forward(pixels(train.Images[i]), sh)
			sm := softmax(p.acts[len(p.acts)-1])
			loss -= math.Log(max(sm[train.Labels[i]], 1e-300))
			n.step(p, train.Labels[i], lr, sh)
		}
		if c.Log != nil {
			fmt.Fprintf(c.Log, "epoch %d: lr %.4g, mean loss %.4f\n", e+1, lr, loss/float64(count))
		}
		lr /= 2
	}
	return n, nil
}

// Predict is the float model's class for one image.
func (n *Net) Predict(img []byte) int {
	p := n.forward(pixels(img), n.shapes())
	out := p.acts[len(p.acts)-1]
	best := 0
	for i, v := range out {
		if v > out[best] {
			best = i
		}
	}
	return best
}

// Accuracy is the float model's accuracy on a set.
func (n *Net) Accuracy(s *infer.MNIST) float64 {
	ok := 0
	for i, img := range s.Images {
		if n.Predict(img) == s.Labels[i] {
			ok++
		}
	}
	return float64(ok) / float64(len(s.Images))
}

// Quantize returns the fixed-point model (see the package comment).
func (n *Net) Quantize(name string, ring, frac int) (*infer.Model, error) {
	m := &infer.Model{Name: name, Ring: ring, Frac: frac, Input: n.input}
	lastLinear := -1
	for i, l := range n.Layers {
		if l.Linear() {
			lastLinear = i
		}
	}
	sw, sb := math.Ldexp(1, frac), math.Ldexp(1, 2*frac)
	pendingTrunc := false
	flush := func() {
		if pendingTrunc {
			m.Layers = append(m.Layers, infer.Layer{Kind: infer.Trunc, S: frac})
			pendingTrunc = false
		}
	}
	for i, l := range n.Layers {
		switch l.Kind {
		case infer.FC, infer.Conv, infer.Flatten:
			flush()
		}
		q := l
		if l.Linear() {
			q.W = make([]int64, len(n.w[i]))
			for j, v := range n.w[i] {
				q.W[j] = int64(math.Round(v * sw))
			}
			q.B = make([]int64, len(n.b[i]))
			for j, v := range n.b[i] {
				q.B[j] = int64(math.Round(v * sb))
			}
			pendingTrunc = i != lastLinear
		}
		m.Layers = append(m.Layers, q)
	}
	flush()
	if err := m.Validate(true); err != nil {
		return nil, err
	}
	return m, nil
}

// FixedAccuracy evaluates the fixed-point model in the clear on a set and
// returns its accuracy and the number of images on which any value
// overflowed the ring.
func FixedAccuracy(m *infer.Model, s *infer.MNIST) (acc float64, overflowImages int, maxAbs int64, err error) {
	ok := 0
	for i, img := range s.Images {
		out, st, err := m.Ref(infer.QuantizeImage(img, m.Frac))
		if err != nil {
			return 0, 0, 0, err
		}
		if st.Overflow > 0 {
			overflowImages++
		}
		maxAbs = max(maxAbs, st.MaxAbs)
		if infer.Argmax(out) == s.Labels[i] {
			ok++
		}
	}
	return float64(ok) / float64(len(s.Images)), overflowImages, maxAbs, nil
}
