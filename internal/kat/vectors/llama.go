package vectors

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

// llamaJSON is LLAMA's DCF vectors, shared/spec/llama/dcf-vectors.json.
//
//go:embed llama-dcf-vectors.json
var llamaJSON []byte

// Llama is one of LLAMA's DCF vectors: a key pair made by LLAMA's
// keyGenDCF and Peer::send_dcf_keypack from two roots, with LLAMA's
// evalDCF shares at boundary points. fss/llama's tests and kord keygen
// --profile llama's test read them.
type Llama struct {
	InBits  int      `json:"in_bits"`
	OutBits int      `json:"out_bits"`
	Alpha   uint64   `json:"alpha"`
	Payload []uint64 `json:"payload"`
	Pair
	Evals []struct {
		X      uint64   `json:"x"`
		Share0 []uint64 `json:"share0"`
		Share1 []uint64 `json:"share1"`
	} `json:"evals"`
}

// LlamaCount is the number of LLAMA vectors.
const LlamaCount = 14

// LoadLlama returns LLAMA's DCF vectors.
func LoadLlama() ([]Llama, error) {
	var vs []Llama
	if err := json.Unmarshal(llamaJSON, &vs); err != nil {
		return nil, fmt.Errorf("kat: embedded llama vectors: %w", err)
	}
	if len(vs) != LlamaCount {
		return nil, fmt.Errorf("kat: %d embedded llama vectors, want %d", len(vs), LlamaCount)
	}
	return vs, nil
}
