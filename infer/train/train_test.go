package train

import (
	"bytes"
	"testing"

	"github.com/kord-fss/kord/infer"
)

func sets(t *testing.T) (*infer.MNIST, *infer.MNIST) {
	t.Helper()
	tr, te, err := infer.LoadMNIST()
	if err != nil {
		t.Fatal(err)
	}
	return tr, te
}

// TestTrainDeterministicAndLearns: a short run is a function of its seed
// (byte-identical model files), learns (well above chance on held-out
// images), and quantizes to a valid, overflow-free model whose
// fixed-point predictions agree with the float model on most images.
func TestTrainDeterministicAndLearns(t *testing.T) {
	train, test := sets(t)
	small := &infer.MNIST{Images: test.Images[:300], Labels: test.Labels[:300]}
	for _, model := range []string{"mlp", "cnn"} {
		c := DefaultConfig(model)
		c.Epochs, c.Limit = 1, 2000
		if model == "cnn" {
			c.Limit = 500
		}
		var files [2][]byte
		var last *Net
		for i := range files {
			n, err := Train(c, train)
			if err != nil {
				t.Fatal(err)
			}
			m, err := n.Quantize(model, c.Ring, c.Frac)
			if err != nil {
				t.Fatal(err)
			}
			if files[i], err = m.Marshal(); err != nil {
				t.Fatal(err)
			}
			last = n
		}
		if !bytes.Equal(files[0], files[1]) {
			t.Fatalf("%s: two runs with seed %d differ", model, c.Seed)
		}
		m, err := infer.Parse(files[0])
		if err != nil {
			t.Fatal(err)
		}
		fa := last.Accuracy(small)
		qa, ovf, _, err := FixedAccuracy(m, small)
		if err != nil {
			t.Fatal(err)
		}
		if fa < 0.5 || qa < 0.5 || ovf != 0 || qa < fa-0.05 {
			t.Fatalf("%s: float %.3f, fixed %.3f, %d overflow images", model, fa, qa, ovf)
		}
	}
}

// TestUnknownModel: a clear error, not a panic.
func TestUnknownModel(t *testing.T) {
	if _, err := NewNet("resnet", 1); err == nil {
		t.Fatal("unknown model accepted")
	}
	if _, err := Train(Config{Model: "mlp"}, &infer.MNIST{}); err == nil {
		t.Fatal("zero epochs accepted")
	}
}
