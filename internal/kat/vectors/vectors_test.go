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
// byte.
func TestMatchesSpec(t *testing.T) {
	for _, dir := range []string{"../../../shared/spec", "../../../../shared/spec", "../../../../../shared/spec"} {
		spec, err := os.ReadFile(dir + "/kord-v1-vectors.json")
		if err != nil {
			continue
		}
		if !bytes.Equal(spec, vectorsJSON) {
			t.Fatalf("internal/kat/vectors/kord-v1-vectors.json differs from %s/kord-v1-vectors.json", dir)
		}
		return
	}
	t.Skip("no shared/spec in or beside the repository")
}
