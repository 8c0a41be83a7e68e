package mpspdz

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Players is the number of semi2k players the files are for.
const Players = 2

// Subdir is the directory under Player-Data that holds two-party Z_2^64
// preprocessing.
const Subdir = "2-DR-64"

// MaxDim bounds each dimension of a matrix triple (as the module does).
const MaxDim = 1 << 16

// Kind is what one file holds: Triples, Squares or Bits, or matrix triples
// of an M×K by K×N product.
type Kind struct {
	Name    string // "Triples", "Squares", "Bits" or "Matrix"
	M, K, N int    // Matrix only
}

// The scalar kinds.
var (
	Triples = Kind{Name: "Triples"}
	Squares = Kind{Name: "Squares"}
	Bits    = Kind{Name: "Bits"}
)

// Matrix is the kind of matrix triples for an m×k by k×n product.
func Matrix(m, k, n int) (Kind, error) {
	if m < 1 || k < 1 || n < 1 || m > MaxDim || k > MaxDim || n > MaxDim {
		return Kind{}, fmt.Errorf("mpspdz: matrix shape %dx%dx%d: each dimension must be in 1..%d", m, k, n, MaxDim)
	}
	return Kind{Name: "Matrix", M: m, K: k, N: n}, nil
}

// Words is the number of 64-bit shares of one tuple: 3 (a, b, c), 2 (a,
// a²), 1 (r) or m·k + k·n + m·n (A, B, C).
func (k Kind) Words() int {
	switch k.Name {
	case "Triples":
		return 3
	case "Squares":
		return 2
	case "Bits":
		return 1
	case "Matrix":
		return k.M*k.K + k.K*k.N + k.M*k.N
	}
	return 0
}

// valid reports whether k is one of the kinds.
func (k Kind) valid() bool {
	switch k.Name {
	case "Triples", "Squares", "Bits":
		return k.M == 0 && k.K == 0 && k.N == 0
	case "Matrix":
		_, err := Matrix(k.M, k.K, k.N)
		return err == nil
	}
	return false
}

// String is the kind as its file name has it ("Triples",
// "Matrix-2x3x4").
func (k Kind) String() string {
	if k.Name == "Matrix" {
		return fmt.Sprintf("Matrix-%dx%dx%d", k.M, k.K, k.N)
	}
	return k.Name
}

// FileName is player p's file of kind k: "Triples-DR-P0",
// "Matrix-2x3x4-P1".
func (k Kind) FileName(p int) string {
	if k.Name == "Matrix" {
		return fmt.Sprintf("%s-P%d", k, p)
	}
	return fmt.Sprintf("%s-DR-P%d", k.Name, p)
}

// Path is player p's file of kind k under the Player-Data directory dir.
func Path(dir string, k Kind, p int) string {
	return filepath.Join(dir, Subdir, k.FileName(p))
}

// ParseFileName reads a file name of the layout back into its kind and
// player; ok is false for any other name.
func ParseFileName(name string) (k Kind, player int, ok bool) {
	i := strings.LastIndex(name, "-P")
	if i < 0 || (name[i+2:] != "0" && name[i+2:] != "1") {
		return Kind{}, 0, false
	}
	player = int(name[i+2] - '0')
	stem := name[:i]
	for _, s := range []Kind{Triples, Squares, Bits} {
		if stem == s.Name+"-DR" {
			return s, player, true
		}
	}
	dims, found := strings.CutPrefix(stem, "Matrix-")
	if !found {
		return Kind{}, 0, false
	}
	parts := strings.Split(dims, "x")
	if len(parts) != 3 {
		return Kind{}, 0, false
	}
	var d [3]int
	for j, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || strconv.Itoa(v) != p {
			return Kind{}, 0, false
		}
		d[j] = v
	}
	k, err := Matrix(d[0], d[1], d[2])
	if err != nil {
		return Kind{}, 0, false
	}
	return k, player, true
}

// ParseMatrixSpec reads the CLI form MxKxN:COUNT.
func ParseMatrixSpec(s string) (Kind, int, error) {
	shape, cnt, found := strings.Cut(s, ":")
	if !found {
		return Kind{}, 0, fmt.Errorf("--matrix %q: want MxKxN:COUNT", s)
	}
	k, _, ok := ParseFileName("Matrix-" + shape + "-P0")
	if !ok {
		return Kind{}, 0, fmt.Errorf("--matrix %q: shape %q is not MxKxN with each dimension in 1..%d", s, shape, MaxDim)
	}
	n, err := strconv.Atoi(cnt)
	if err != nil || n < 1 {
		return Kind{}, 0, fmt.Errorf("--matrix %q: count %q is not a positive integer", s, cnt)
	}
	return k, n, nil
}
