package infer

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/kord-fss/kord/gates"
)

var (
	mnistOnce sync.Once
	mnistTest *MNIST
	mnistErr  error
)

func testSet(t testing.TB) *MNIST {
	t.Helper()
	mnistOnce.Do(func() { _, mnistTest, mnistErr = LoadMNIST() })
	if mnistErr != nil {
		t.Fatal(mnistErr)
	}
	return mnistTest
}

func loadModel(t testing.TB, name string) *Model {
	t.Helper()
	m, err := Load("testdata/" + name + ".kordnn")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCommittedModels: both committed models parse, are overflow-free on
// the first 200 test images and classify them at least as well as
// reported (97% MLP, 98% CNN on all 10,000; here a loose floor).
func TestCommittedModels(t *testing.T) {
	set := testSet(t)
	for _, name := range []string{"mlp", "cnn"} {
		m := loadModel(t, name)
		ok := 0
		const n = 200
		for i := 0; i < n; i++ {
			out, st, err := m.Ref(QuantizeImage(set.Images[i], m.Frac))
			if err != nil {
				t.Fatal(err)
			}
			if st.Overflow != 0 {
				t.Fatalf("%s: image %d overflows the ring", name, i)
			}
			if Argmax(out) == set.Labels[i] {
				ok++
			}
		}
		if ok < n*95/100 {
			t.Fatalf("%s: %d of %d correct", name, ok, n)
		}
	}
}

// TestBadImage: a client image of the wrong size is refused with
// ErrInput, naming the sizes, and the owner's side returns an error too
// (no hang).
func TestBadImage(t *testing.T) {
	m := loadModel(t, "mlp")
	src := Sources{Keys: &gates.DealerSource{}, Corr: &DealerCorr{}}
	_, _, err := Run(m, make([]int64, 783), src)
	if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "783") {
		t.Fatalf("wrong-size image: %v", err)
	}
}

// TestPeerDisconnect: the client disconnects after the first layer; the
// owner returns an error naming the layer it was in, and nothing further
// is consumed from the material (a reuse is refused).
func TestPeerDisconnect(t *testing.T) {
	m := loadModel(t, "cnn")
	sess, mat := dealerGen(t, m.Arch())
	c0, c1 := connPair(t)
	// The client opens the weights and runs only the first layer by hand,
	// then hangs up.
	done := make(chan error, 1)
	go func() {
		arch := m.Arch()
		p := &gates.Party{B: 1, Conn: c1}
		if err := sess[1].Open(p, arch); err != nil {
			done <- err
			return
		}
		x := QuantizeImage(testSet(t).Images[0], m.Frac)
		cur := make([]uint64, len(x))
		for i, v := range x {
			cur[i] = uint64(v) & mask(m.Ring)
		}
		shapes, _ := m.Shapes()
		_, err := linearOnline(p, &arch.Layers[0], shapes[0], shapes[1], m.Ring, sess[1].a[0], sess[1].what[0], mat[1].layers[0].lin, cur)
		c1.Close()
		done <- err
	}()
	_, err := Eval(&gates.Party{B: 0, Conn: c0}, m, sess[0], mat[0], nil)
	if cerr := <-done; cerr != nil {
		t.Fatal(cerr)
	}
	if err == nil || !strings.Contains(err.Error(), "layer 1 (maxpool)") {
		t.Fatalf("owner after disconnect: %v, want an error in layer 1 (maxpool)", err)
	}
	if _, err := Eval(&gates.Party{B: 0, Conn: c0}, m, sess[0], mat[0], nil); !errors.Is(err, ErrUsed) {
		t.Fatalf("reuse after failure: %v, want ErrUsed", err)
	}
}

// TestBadModelFile: files that do not parse give ErrFormat with the
// field; Load names the path.
func TestBadModelFile(t *testing.T) {
	good, err := os.ReadFile("testdata/mlp.kordnn")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"magic":     []byte("NOTAMODEL"),
		"truncated": good[:len(good)/2],
		"trailing":  append(append([]byte(nil), good...), 0),
		"empty":     nil,
	}
	bad := append([]byte(nil), good...)
	bad[len(magic)+1+len("mlp")] = 99 // ring 99
	cases["ring"] = bad
	for name, data := range cases {
		if _, err := Parse(data); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", name, err)
		}
	}
	dir := t.TempDir()
	p := dir + "/x.kordnn"
	if err := os.WriteFile(p, good[:100], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), p) {
		t.Fatalf("Load: %v", err)
	}
}

// TestMarshalRoundTrip: Parse(Marshal(m)) == m for the committed models.
func TestMarshalRoundTrip(t *testing.T) {
	for _, name := range []string{"mlp", "cnn"} {
		data, err := os.ReadFile("testdata/" + name + ".kordnn")
		if err != nil {
			t.Fatal(err)
		}
		m, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		again, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(data) {
			t.Fatalf("%s: re-encoding differs", name)
		}
	}
}

// FuzzParse: Parse never panics, and whatever it accepts re-encodes to
// the same bytes and has consistent shapes.
func FuzzParse(f *testing.F) {
	// (the committed files are seeds by their headers only: a 100 KB
	// input slows the fuzzer's mutation loop to a crawl)
	if data, err := os.ReadFile("testdata/cnn.kordnn"); err == nil {
		f.Add(data[:64])
	}
	small := &Model{Name: "s", Ring: 16, Frac: 2, Input: Shape{1, 4, 4}, Layers: []Layer{
		{Kind: Conv, In: 1, Out: 1, K: 2, W: []int64{1, -1, 2, 0}, B: []int64{3}},
		{Kind: MaxPool, K: 2}, {Kind: ReLU}, {Kind: Trunc, S: 2}, {Kind: Flatten},
		{Kind: FC, In: 1, Out: 2, W: []int64{5, -5}, B: []int64{0, 1}},
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
		if _, err := m.Shapes(); err != nil {
			t.Fatal(err)
		}
		again, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(data) {
			// varints have non-minimal encodings; the model must still agree
			m2, err := Parse(again)
			if err != nil || m2.Name != m.Name || len(m2.Layers) != len(m.Layers) {
				t.Fatal("re-encoding does not parse to the same model")
			}
		}
	})
}
