package vectors

import (
	"bytes"
	"os"
	"testing"
)

// TestLoad: the vectors parse, and a sample of the fields is filled in.
func TestLoad(t *testing.T) {
	vs, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		if v.Type == "" || v.InBits == 0 || v.OutBits == 0 || len(v.Key0) == 0 || len(v.Key1) == 0 || len(v.Evals) == 0 {
			t.Fatalf("vector %d is missing fields: %+v", i, v)
		}
	}
}

// TestMatchesSpec: where the spec's own copy is checked out in or beside
// the repository (shared/spec), the vectors here are that file byte for
// byte: kord-v1's and LLAMA's.
func TestMatchesSpec(t *testing.T) {
	for _, dir := range []string{"../../../shared/spec", "../../../../shared/spec", "../../../../../shared/spec"} {
		spec, err := os.ReadFile(dir + "/kord-v1-vectors.json")
		if err != nil {
			continue
		}
		if !bytes.Equal(spec, vectorsJSON) {
			t.Fatalf("internal/kat/vectors/kord-v1-vectors.json differs from %s/kord-v1-vectors.json", dir)
		}
		if llama, err := os.ReadFile(dir + "/llama/dcf-vectors.json"); err == nil && !bytes.Equal(llama, llamaJSON) {
			t.Fatalf("internal/kat/vectors/llama-dcf-vectors.json differs from %s/llama/dcf-vectors.json", dir)
		}
		return
	}
	t.Skip("no shared/spec in or beside the repository")
}

// TestLoadLlama: LLAMA's vectors parse, all of them, with their fields.
func TestLoadLlama(t *testing.T) {
	vs, err := LoadLlama()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		if v.InBits == 0 || v.OutBits == 0 || len(v.Payload) == 0 || len(v.Key0) == 0 || len(v.Key1) == 0 || len(v.Evals) == 0 {
			t.Fatalf("llama vector %d is missing fields: %+v", i, v)
		}
	}
}
