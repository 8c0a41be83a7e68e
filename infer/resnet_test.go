package infer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/gates"
)

// smallResNet is the bounded ResNet-18 of the tests and CI: the full
// topology (stem, max-pool, four stages of two blocks with projections,
// global average pool, FC) on a 32×32 input with 8 channels in stage 1.
var smallResNet = ResNetConfig{Side: 32, Width: 8, Classes: 10, Ring: 32, Frac: 10}

func smallResNetModel(t testing.TB) (*Model, []int64) {
	t.Helper()
	m, err := ResNetModel(smallResNet.Name())
	if err != nil {
		t.Fatal(err)
	}
	return m, ResNetImage(m, ResNetSeed)
}

// TestResNetSmall: the reduced ResNet-18, every key and correlation from
// a paired module pair, streamed in small chunks (many steps per layer),
// with and without overlap: the client's logits equal the cleartext
// fixed-point model bit for bit, no value overflows the ring, and the
// keys, correlations, rounds and bytes are exactly the inventory's.
func TestResNetSmall(t *testing.T) {
	m, x := smallResNetModel(t)
	want, st, err := m.Ref(x)
	if err != nil {
		t.Fatal(err)
	}
	if st.Overflow != 0 {
		t.Fatalf("the reference overflows ℓ = %d at %d values (max |v| %d)", m.Ring, st.Overflow, st.MaxAbs)
	}
	const chunk = 700
	inv, err := m.KeyInventory(chunk)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := m.KeyInventory(1 << 30)
	if err != nil {
		t.Fatal(err)
	}
	b, err := SupplyOnly(m, Sources{Keys: &gates.DealerSource{}, Corr: &DealerCorr{}}, chunk)
	if err != nil || b != inv.MaterialBytes {
		t.Fatalf("dealer supply of the whole inventory: %d bytes per party (%v), inventory %d", b, err, inv.MaterialBytes)
	}
	for _, overlap := range []bool{false, true} {
		name := "sequential"
		if overlap {
			name = "overlap"
		}
		t.Run(name, func(t *testing.T) {
			var prog bytes.Buffer
			got, rep, err := RunStream(context.Background(), m, x, moduleSources(t), StreamConfig{Chunk: chunk, Overlap: overlap, Ahead: 2, Progress: &prog})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d logits, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("logit %d: secure %d, cleartext %d", i, got[i], want[i])
				}
			}
			if rep.KeysTotal != inv.KeyTotal || rep.Correlations != inv.Correlations || rep.CorrWords != inv.CorrWords ||
				int(rep.OnlineRounds) != inv.Rounds || int(rep.OnlineBytes) != inv.Bytes || rep.WeightMaskWords != inv.SessionWords ||
				int(rep.SessionBytes) != inv.SessionBytes {
				t.Fatalf("run: keys %d corr %d words %d rounds %d bytes %d session words %d bytes %d; inventory %d %d %d %d %d %d %d",
					rep.KeysTotal, rep.Correlations, rep.CorrWords, rep.OnlineRounds, rep.OnlineBytes, rep.WeightMaskWords, rep.SessionBytes,
					inv.KeyTotal, inv.Correlations, inv.CorrWords, inv.Rounds, inv.Bytes, inv.SessionWords, inv.SessionBytes)
			}
			for k, v := range inv.Keys {
				if rep.Keys[k] != v {
					t.Fatalf("%s keys: run %d, inventory %d", k, rep.Keys[k], v)
				}
			}
			if rep.OnlineRounds <= int64(whole.Rounds) {
				t.Fatalf("%d rounds: the chunk of %d did not split the layers (%d rounds unsplit)", rep.OnlineRounds, chunk, whole.Rounds)
			}
			if !strings.Contains(prog.String(), "relu") || !strings.Contains(prog.String(), "keys/s") {
				t.Fatalf("no per-layer progress lines:\n%s", prog.String())
			}
		})
	}
}

// TestLowerMatchesDirect: for random strided, padded convolutions the
// cleartext model through Lower (space-to-depth and a stride-1 Conv)
// equals the direct definition, on random weights and inputs.
func TestLowerMatchesDirect(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 60; trial++ {
		k := 1 + r.IntN(7)
		s := 1 + r.IntN(3)
		pad := r.IntN(k)
		side := k + r.IntN(9)
		ci, co := 1+r.IntN(3), 1+r.IntN(3)
		ring := []int{16, 32, 64}[r.IntN(3)]
		m := &Model{Name: "t", Ring: ring, Frac: 2, Input: Shape{ci, side, side + r.IntN(3)}, Layers: []Layer{
			{Kind: Conv2D, In: ci, Out: co, K: k, Stride: s, Pad: pad},
		}}
		withWeights(r, m, 50)
		x := randVals(r, m.Input.Len(), 1000)
		want, _, err := m.Ref(x)
		if err != nil {
			t.Fatalf("k=%d s=%d pad=%d side=%d: %v", k, s, pad, side, err)
		}
		low, err := Lower(m)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := low.Ref(x)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("k=%d s=%d pad=%d side=%d ring=%d: output %d lowered %d, direct %d", k, s, pad, side, ring, i, got[i], want[i])
			}
		}
		// and the direct definition, one output by hand
		sh, _ := m.Shapes()
		o := sh[1]
		c, oy, ox := r.IntN(o.C), r.IntN(o.H), r.IntN(o.W)
		acc := m.Layers[0].B[c]
		for i := 0; i < ci; i++ {
			for ky := 0; ky < k; ky++ {
				for kx := 0; kx < k; kx++ {
					y, xx := oy*s+ky-pad, ox*s+kx-pad
					if y >= 0 && y < side && xx >= 0 && xx < m.Input.W {
						acc += m.Layers[0].W[((c*ci+i)*k+ky)*k+kx] * x[(i*side+y)*m.Input.W+xx]
					}
				}
			}
		}
		if w := signed(uint64(acc), ring); want[(c*o.H+oy)*o.W+ox] != w {
			t.Fatalf("direct output (%d,%d,%d) = %d, by hand %d", c, oy, ox, want[(c*o.H+oy)*o.W+ox], w)
		}
	}
}

// TestApplyFast: the im2col GEMM equals the plain loop mod 2^ℓ for FC and
// Conv at several widths and shapes (odd sizes exercise the remainders).
func TestApplyFast(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 40; trial++ {
		ring := []int{12, 32, 33, 64}[trial%4]
		var l Layer
		var in Shape
		if trial%3 == 0 {
			n := 1 + r.IntN(40)
			l = Layer{Kind: FC, In: n, Out: 1 + r.IntN(11)}
			in = Shape{n, 1, 1}
		} else {
			k := 1 + r.IntN(4)
			in = Shape{1 + r.IntN(5), k + r.IntN(8), k + r.IntN(8)}
			l = Layer{Kind: Conv, In: in.C, Out: 1 + r.IntN(9), K: k}
		}
		w := make([]uint64, l.weightLen())
		x := make([]uint64, in.Len())
		for i := range w {
			w[i] = r.Uint64() & mask(ring)
		}
		for i := range x {
			x[i] = r.Uint64() & mask(ring)
		}
		n := outLen(&l, in)
		want, got := make([]uint64, n), make([]uint64, n)
		for i := range want {
			want[i] = r.Uint64()
			got[i] = want[i]
		}
		apply(&l, in, w, x, want)
		applyFast(&l, in, w, x, got, ring)
		for i := range want {
			if (want[i]^got[i])&mask(ring) != 0 {
				t.Fatalf("%v %v ring %d: output %d: fast %x, plain %x", l.Kind, in, ring, i, got[i]&mask(ring), want[i]&mask(ring))
			}
		}
	}
}

// TestLayers2Secure: each new layer kind inside a small model (padded,
// strided max-pools with 2×2 and 3×3 windows, a 2×2 average pool with its
// truncation, save/swap/add with a projection) at ℓ = 16 and 32, keys from
// a paired module pair, equals the cleartext model bit for bit, on inputs
// of both signs.
func TestLayers2Secure(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, ring := range []int{16, 32} {
		m := &Model{Name: "l2", Ring: ring, Frac: 3, Input: Shape{2, 9, 9}, Layers: []Layer{
			{Kind: Save, S: 1},
			{Kind: Conv2D, In: 2, Out: 3, K: 3, Stride: 2, Pad: 1},
			{Kind: Trunc, S: 3},
			{Kind: MaxPool2D, K: 3, Stride: 1, Pad: 1},
			{Kind: MaxPool2D, K: 2, Stride: 1, Pad: 1},
			{Kind: MaxPool2D, K: 2, Stride: 1},
			{Kind: Swap, S: 1},
			{Kind: Conv2D, In: 2, Out: 3, K: 1, Stride: 2},
			{Kind: Trunc, S: 3},
			{Kind: MaxPool2D, K: 3, Stride: 1, Pad: 1},
			{Kind: Add, S: 1},
			{Kind: ReLU},
			{Kind: MaxPool2D, K: 3, Stride: 2, Pad: 1},
			{Kind: AvgPool, K: 2, S: 5},
			{Kind: Trunc, S: 5},
			{Kind: Flatten},
			{Kind: FC, In: 3, Out: 4},
		}}
		withWeights(r, m, 12)
		for trial := 0; trial < 2; trial++ {
			x := randVals(r, m.Input.Len(), 40)
			want, _, err := m.Ref(x)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := RunStream(context.Background(), m, x, moduleSources(t), StreamConfig{Chunk: 7, Overlap: trial == 1})
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("ℓ=%d: logit %d: secure %d, cleartext %d", ring, i, got[i], want[i])
				}
			}
		}
	}
}

// failingKeys fails every key request after the first n.
type failingKeys struct {
	gates.KeySource
	n int
}

var errInjected = errors.New("injected key-source failure")

func (f *failingKeys) Derived(p fss.Params, wantBeta bool) ([2]*fss.Key, [2]uint64, [2]uint64, error) {
	if f.n <= 0 {
		return [2]*fss.Key{}, [2]uint64{}, [2]uint64{}, errInjected
	}
	f.n--
	return f.KeySource.Derived(p, wantBeta)
}

// TestStreamErrors: a bad image and a key source that fails mid-model both
// end the run with a clear error (naming the layer for the failure), in
// both modes, and the run does not hang.
func TestStreamErrors(t *testing.T) {
	m := &Model{Name: "e", Ring: 16, Frac: 2, Input: Shape{1, 4, 4}, Layers: []Layer{
		{Kind: Conv2D, In: 1, Out: 2, K: 3, Pad: 1, Stride: 1}, {Kind: ReLU}, {Kind: Trunc, S: 2},
		{Kind: MaxPool2D, K: 2, Stride: 2}, {Kind: ReLU},
	}}
	withWeights(rand.New(rand.NewPCG(7, 8)), m, 5)
	src := moduleSources(t)
	if _, _, err := RunStream(context.Background(), m, make([]int64, 15), src, StreamConfig{}); !errors.Is(err, ErrInput) {
		t.Fatalf("short image: %v", err)
	}
	for _, overlap := range []bool{false, true} {
		bad := Sources{Keys: &failingKeys{KeySource: &gates.DealerSource{}, n: 40}, Corr: &DealerCorr{}}
		_, _, err := RunStream(context.Background(), m, make([]int64, 16), bad, StreamConfig{Chunk: 8, Overlap: overlap})
		if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "layer") {
			t.Fatalf("overlap=%v: failing key source: %v", overlap, err)
		}
	}
}

// TestResNetShapes: the ImageNet ResNet-18 has the standard shapes
// (112×112 after the stem, 56 after the pool, 7×7×512 before the average
// pool), 11,684,712 parameters, and its inventory's ReLU and truncation
// counts follow from them.
func TestResNetShapes(t *testing.T) {
	m, err := ResNet18(ResNet18ImageNet)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := m.Shapes()
	if err != nil {
		t.Fatal(err)
	}
	if sh[1] != (Shape{64, 112, 112}) || sh[3] != (Shape{64, 56, 56}) || sh[len(sh)-5] != (Shape{512, 7, 7}) || sh[len(sh)-1] != (Shape{1000, 1, 1}) {
		t.Fatalf("shapes: stem %v pool %v last block %v out %v", sh[1], sh[3], sh[len(sh)-5], sh[len(sh)-1])
	}
	params := 0
	for i := range m.Layers {
		if m.Layers[i].Linear() {
			params += m.Layers[i].weightLen() + m.Layers[i].Out
		}
	}
	// torchvision's resnet18 has 11,689,512: its 4,800 batch-norm
	// channels carry γ and β (2 each), folded here into one bias each
	if params != 11689512-4800 {
		t.Fatalf("%d parameters, want 11,689,512 − 4,800", params)
	}
	inv, err := m.KeyInventory(0)
	if err != nil {
		t.Fatal(err)
	}
	// the stem's ReLU after its max-pool: on 64×56×56, not 64×112×112
	relus := 64*56*56 + 4*(64*56*56+128*28*28+256*14*14+512*7*7)
	pool := 64*112*56*2 + 64*56*56*2 // separable 3×3: rows, then columns
	if inv.ReLUs != relus+pool {
		t.Fatalf("%d ReLU comparisons, want %d + %d", inv.ReLUs, relus, pool)
	}
	if inv.KeyTotal != 2*inv.ReLUs+2*inv.Truncations {
		t.Fatalf("%d keys for %d ReLUs and %d truncations", inv.KeyTotal, inv.ReLUs, inv.Truncations)
	}
}

// TestFoldBatchNorm: a convolution followed by batch norm equals the
// folded convolution (float, per output).
func TestFoldBatchNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	co, n := 3, 5
	w, b := make([]float64, co*n), make([]float64, co)
	g, be, mu, v := make([]float64, co), make([]float64, co), make([]float64, co), make([]float64, co)
	for i := range w {
		w[i] = r.NormFloat64()
	}
	for c := 0; c < co; c++ {
		b[c], g[c], be[c], mu[c], v[c] = r.NormFloat64(), 1+r.Float64(), r.NormFloat64(), r.NormFloat64(), r.Float64()
	}
	fw, fb, err := FoldBatchNorm(w, b, g, be, mu, v, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	for c := 0; c < co; c++ {
		y, z := b[c], fb[c]
		for i := 0; i < n; i++ {
			y += w[c*n+i] * x[i]
			z += fw[c*n+i] * x[i]
		}
		y = g[c]*(y-mu[c])/math.Sqrt(v[c]+1e-5) + be[c]
		if math.Abs(y-z) > 1e-9 {
			t.Fatalf("channel %d: conv+BN %v, folded %v", c, y, z)
		}
	}
	if _, _, err := FoldBatchNorm(w, b, g[:2], be, mu, v, 1e-5); err == nil {
		t.Fatal("mismatched lengths accepted")
	}
}

// TestResNetFileRoundTrip: the reduced ResNet (every new layer kind)
// survives the model file format unchanged.
func TestResNetFileRoundTrip(t *testing.T) {
	m, x := smallResNetModel(t)
	data, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	m2, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := m.Ref(x)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := m2.Ref(x)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("logit %d differs after a file round trip", i)
		}
	}
	if _, err := Parse(data[:len(data)-3]); !errors.Is(err, ErrFormat) {
		t.Fatalf("truncated file: %v", err)
	}
}

// FuzzParseLayers2: files with the residual-network layer kinds never
// make Parse, Lower or Ref panic; what Parse accepts re-encodes, lowers to
// the same output shape, and evaluates.
func FuzzParseLayers2(f *testing.F) {
	small := &Model{Name: "r", Ring: 16, Frac: 2, Input: Shape{1, 5, 5}, Layers: []Layer{
		{Kind: Save, S: 0},
		{Kind: Conv2D, In: 1, Out: 2, K: 3, Stride: 2, Pad: 1, W: make([]int64, 18), B: []int64{1, 2}},
		{Kind: MaxPool2D, K: 2, Stride: 1, Pad: 1},
		{Kind: Swap, S: 0},
		{Kind: Conv2D, In: 1, Out: 2, K: 1, Stride: 2, W: []int64{3, -1}, B: []int64{0, 0}},
		{Kind: MaxPool2D, K: 2, Stride: 1, Pad: 1},
		{Kind: Add, S: 0},
		{Kind: AvgPool, K: 2, S: 3},
		{Kind: Save, S: 2}, {Kind: LoadSlot, S: 2}, {Kind: Concat, S: 2},
		{Kind: SpaceToDepth, Stride: 2, Pad: 1, K: 2, In: 2, Out: 2},
	}}
	if data, err := small.Marshal(); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error does not wrap ErrFormat: %v", err)
			}
			return
		}
		again, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(again); err != nil {
			t.Fatalf("re-encoding does not parse: %v", err)
		}
		if m.Input.Len() > 1<<12 {
			return
		}
		if _, err := Lower(m); err != nil && !strings.Contains(err.Error(), "layers") {
			t.Fatalf("accepted model does not lower: %v", err)
		}
		if _, _, err := m.Ref(make([]int64, m.Input.Len())); err != nil {
			t.Fatalf("accepted model does not evaluate: %v", err)
		}
	})
}

// TestResNetStemReLUAfterPool: the stem's max-pool then ReLU (ResNet18)
// is torchvision's ReLU then max-pool, in the cleartext reference: on
// random conv outputs of both signs for random pool shapes, and on the
// small ResNet-18 with its documented weights and images, whose logits
// are the same in both orders bit for bit.
func TestResNetStemReLUAfterPool(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 1))
	for trial := 0; trial < 50; trial++ {
		k, st := 1+r.IntN(4), 1+r.IntN(3)
		pad := r.IntN(k)
		in := Shape{1 + r.IntN(3), k + r.IntN(7), k + r.IntN(7)}
		pool := Layer{Kind: MaxPool2D, K: k, Stride: st, Pad: pad}
		after := &Model{Name: "p", Ring: 32, Frac: 0, Input: in, Layers: []Layer{pool, {Kind: ReLU}}}
		before := &Model{Name: "p", Ring: 32, Frac: 0, Input: in, Layers: []Layer{{Kind: ReLU}, pool}}
		x := randVals(r, in.Len(), 1<<29)
		a, _, err := after.Ref(x)
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := before.Ref(x)
		if err != nil {
			t.Fatal(err)
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("k=%d stride=%d pad=%d %v: output %d is %d after the pool, %d before", k, st, pad, in, i, a[i], b[i])
			}
		}
	}
	m, _ := smallResNetModel(t)
	if m.Layers[1].Kind != MaxPool2D || m.Layers[2].Kind != ReLU {
		t.Fatalf("stem is %v, %v; want maxpool2d, relu", m.Layers[1].Kind, m.Layers[2].Kind)
	}
	tv := *m
	tv.Layers = append([]Layer(nil), m.Layers...)
	tv.Layers[1], tv.Layers[2] = tv.Layers[2], tv.Layers[1]
	for img := uint64(0); img < 3; img++ {
		x := ResNetImage(m, ResNetSeed+img)
		a, _, err := m.Ref(x)
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := tv.Ref(x)
		if err != nil {
			t.Fatal(err)
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("image %d: logit %d is %d with the ReLU after the pool, %d before", img, i, a[i], b[i])
			}
		}
	}
}

// TestMaxPool2DIsMax: the separable max-pool of the reference equals the
// plain maximum over each zero-padded window, for random shapes and
// values of both signs.
func TestMaxPool2DIsMax(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for trial := 0; trial < 50; trial++ {
		k, st := 1+r.IntN(4), 1+r.IntN(3)
		pad := r.IntN(k)
		in := Shape{1 + r.IntN(3), k + r.IntN(7), k + r.IntN(7)}
		m := &Model{Name: "p", Ring: 32, Frac: 0, Input: in, Layers: []Layer{{Kind: MaxPool2D, K: k, Stride: st, Pad: pad}}}
		x := randVals(r, in.Len(), 1000)
		got, _, err := m.Ref(x)
		if err != nil {
			t.Fatal(err)
		}
		sh, _ := m.Shapes()
		o := sh[1]
		for c := 0; c < o.C; c++ {
			for oy := 0; oy < o.H; oy++ {
				for ox := 0; ox < o.W; ox++ {
					best := int64(math.MinInt64)
					for ky := 0; ky < k; ky++ {
						for kx := 0; kx < k; kx++ {
							v := int64(0)
							if y, xx := oy*st+ky-pad, ox*st+kx-pad; y >= 0 && y < in.H && xx >= 0 && xx < in.W {
								v = x[(c*in.H+y)*in.W+xx]
							}
							best = max(best, v)
						}
					}
					if g := got[(c*o.H+oy)*o.W+ox]; g != best {
						t.Fatalf("k=%d stride=%d pad=%d %v: output (%d,%d,%d) = %d, max %d", k, st, pad, in, c, oy, ox, g, best)
					}
				}
			}
		}
	}
}

// TestResNetFromTorch: torchvision-named tensors of the seeded weights
// (batch norms at the identity: γ = √(1+ε), β = 0, μ = 0, σ² = 1) give
// back exactly the seeded model; a missing or mis-sized tensor is an
// error naming it.
func TestResNetFromTorch(t *testing.T) {
	c := ResNetConfig{Side: 32, Width: 4, Classes: 10, Ring: 32, Frac: 10}
	want, err := ResNetModel(c.Name())
	if err != nil {
		t.Fatal(err)
	}
	const eps = 1e-5
	params := map[string][]float64{}
	f := func(v []int64, frac int) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = math.Ldexp(float64(x), -frac)
		}
		return out
	}
	var convs []string
	convs = append(convs, "conv1.weight|bn1")
	for s := 1; s <= 4; s++ {
		for b := 0; b < 2; b++ {
			p := fmt.Sprintf("layer%d.%d.", s, b)
			convs = append(convs, p+"conv1.weight|"+p+"bn1", p+"conv2.weight|"+p+"bn2")
			if s > 1 && b == 0 {
				convs = append(convs, p+"downsample.0.weight|"+p+"downsample.1")
			}
		}
	}
	at := 0
	for i := range want.Layers {
		l := &want.Layers[i]
		if !l.Linear() {
			continue
		}
		if l.Kind == FC {
			params["fc.weight"], params["fc.bias"] = f(l.W, 10), f(l.B, 20)
			continue
		}
		wn, bn, _ := strings.Cut(convs[at], "|")
		at++
		params[wn] = f(l.W, 10)
		g, z, one := make([]float64, l.Out), make([]float64, l.Out), make([]float64, l.Out)
		for j := range g {
			g[j], one[j] = math.Sqrt(1+eps), 1
		}
		params[bn+".weight"], params[bn+".bias"], params[bn+".running_mean"], params[bn+".running_var"] = g, f(l.B, 20), z, one
	}
	got, err := ResNetFromTorch(c, params, eps)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want.Layers {
		a, b := want.Layers[i], got.Layers[i]
		if len(a.W) != len(b.W) || len(a.B) != len(b.B) {
			t.Fatalf("layer %d: sizes differ", i)
		}
		for j := range a.W {
			if a.W[j] != b.W[j] {
				t.Fatalf("layer %d weight %d: %d, want %d", i, j, b.W[j], a.W[j])
			}
		}
		for j := range a.B {
			if a.B[j] != b.B[j] {
				t.Fatalf("layer %d bias %d: %d, want %d", i, j, b.B[j], a.B[j])
			}
		}
	}
	delete(params, "layer3.0.downsample.1.running_var")
	if _, err := ResNetFromTorch(c, params, eps); err == nil || !strings.Contains(err.Error(), "layer3.0.downsample.1.running_var") {
		t.Fatalf("missing tensor: %v", err)
	}
	params["fc.bias"] = params["fc.bias"][:3]
	params["layer3.0.downsample.1.running_var"] = make([]float64, 16)
	if _, err := ResNetFromTorch(c, params, eps); err == nil || !strings.Contains(err.Error(), "fc.bias") {
		t.Fatalf("short tensor: %v", err)
	}
}

// TestBatchDealer: the batched trusted dealer's derived-style pairs are
// correct DCFs at the α and β their shares add up to (β = 1, or drawn),
// and a streamed run on its keys is bit-exact.
func TestBatchDealer(t *testing.T) {
	d := &BatchDealer{}
	r := rand.New(rand.NewPCG(13, 14))
	for _, p := range []fss.Params{{Type: fss.DCF, InBits: 32, OutBits: 32}, {Type: fss.DCF, InBits: 11, OutBits: 32}, {Type: fss.DCF, InBits: 33, OutBits: 10}} {
		for _, wantBeta := range []bool{false, true} {
			k, as, bs, err := d.DerivedBatch(p, 50, wantBeta)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 50; i++ {
				a := (as[0][i] + as[1][i]) & mask(p.InBits)
				b := (bs[0][i] + bs[1][i]) & mask(p.OutBits)
				if !wantBeta && b != 1 {
					t.Fatalf("%v: β = %d, want 1", p, b)
				}
				if err := fss.CheckPair(k[0][i], k[1][i], a, b, a, (a+1)&mask(p.InBits), (a-1)&mask(p.InBits), r.Uint64()&mask(p.InBits)); err != nil {
					t.Fatalf("%v key %d: %v", p, i, err)
				}
			}
		}
	}
	m, x := smallResNetModel(t)
	want, _, err := m.Ref(x)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := RunStream(context.Background(), m, x, Sources{Keys: d, Corr: &DealerCorr{}}, StreamConfig{Overlap: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("logit %d: %d, want %d", i, got[i], want[i])
		}
	}
}

// TestLowerGroups: a linear layer over MaxCorrWeights is split into
// output-channel groups (save, the groups, load and concat); the lowered
// model equals the original bit for bit in the clear, and securely on
// keys and correlations from a paired module pair (whose parties refuse a
// correlation over the limit).
func TestLowerGroups(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	m := &Model{Name: "g", Ring: 32, Frac: 4, Input: Shape{1025, 1, 1}, Layers: []Layer{
		{Kind: FC, In: 1025, Out: 1024}, {Kind: Trunc, S: 4}, {Kind: ReLU}, {Kind: FC, In: 1024, Out: 3},
	}}
	withWeights(r, m, 20)
	low, err := Lower(m)
	if err != nil {
		t.Fatal(err)
	}
	fcs := 0
	for _, l := range low.Layers {
		if l.Kind == FC {
			fcs++
			if l.weightLen() > MaxCorrWeights {
				t.Fatalf("a lowered layer keeps %d weights", l.weightLen())
			}
		}
	}
	if fcs != 3 {
		t.Fatalf("%d fc layers after lowering, want 3 (the first split in two)", fcs)
	}
	x := randVals(r, m.Input.Len(), 60)
	want, _, err := m.Ref(x)
	if err != nil {
		t.Fatal(err)
	}
	lw, _, err := low.Ref(x)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := RunStream(context.Background(), m, x, moduleSources(t), StreamConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if lw[i] != want[i] || got[i] != want[i] {
			t.Fatalf("output %d: lowered %d, secure %d, want %d", i, lw[i], got[i], want[i])
		}
	}
}
