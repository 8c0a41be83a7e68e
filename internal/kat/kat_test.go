package kat

import "testing"

func TestRunPasses(t *testing.T) {
	r := Run()
	if r.Failed != 0 || r.Passed < 100 {
		t.Fatalf("%+v", r)
	}
}
