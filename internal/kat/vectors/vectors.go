// Package vectors holds kord-v1's known-answer vectors for DPF and DCF
// keys (kord-v1-vectors.json, the file the spec ships beside
// keyformat-v1.md), the one copy in the repository: embedded for the
// binary's self-test (internal/kat) and read by the fss tests; and LLAMA's
// DCF vectors (llama-dcf-vectors.json, the spec's llama/dcf-vectors.json),
// read by the fss/llama and kord keygen tests. It imports nothing of kord,
// so that fss's own tests can use it.
package vectors

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

//go:embed kord-v1-vectors.json
var vectorsJSON []byte

// Vector is one known-answer vector: the shape, (α, β), the two root
// seeds, both keys in hex, and evaluations of each key.
type Vector struct {
	Type    string `json:"type"`
	InBits  int    `json:"in_bits"`
	OutBits int    `json:"out_bits"`
	Alpha   uint64 `json:"alpha"`
	Beta    uint64 `json:"beta"`
	Pair
	Evals []struct {
		X  uint64 `json:"x"`
		Y0 uint64 `json:"y0"`
		Y1 uint64 `json:"y1"`
	} `json:"evals"`
}

// Pair is what every vector holds, kord-v1's and LLAMA's: the two root
// seeds and the two keys they make, in hex.
type Pair struct {
	Root0 string `json:"root0"`
	Root1 string `json:"root1"`
	Key0  string `json:"key0"`
	Key1  string `json:"key1"`
}

// Load returns the vectors.
func Load() ([]Vector, error) {
	var vs []Vector
	if err := json.Unmarshal(vectorsJSON, &vs); err != nil {
		return nil, fmt.Errorf("kat: embedded vectors: %w", err)
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("kat: no embedded vectors")
	}
	return vs, nil
}
