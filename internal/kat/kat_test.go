package kat

import (
	"bytes"
	"os"
	"testing"
)

func TestEmbeddedMatchesSpecVectors(t *testing.T) {
	want, err := os.ReadFile("../../fss/testdata/kord-v1-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, vectorsJSON) {
		t.Fatal("internal/kat/kord-v1-vectors.json differs from fss/testdata; copy it again")
	}
}

func TestRunPasses(t *testing.T) {
	r := Run()
	if r.Failed != 0 || r.Passed < 100 {
		t.Fatalf("%+v", r)
	}
}
