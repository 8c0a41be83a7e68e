package msg

import (
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/fss/llama"
)

// TestProfileShape: kord-v1's type byte is the fss.Type itself (so frames,
// tags and roots of kord-v1 keys keep their bytes), llama's differs; the
// llama profile takes DCFs only, at LLAMA's key size.
func TestProfileShape(t *testing.T) {
	for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
		if TypeByte(KordV1, typ) != byte(typ) {
			t.Fatalf("kord-v1 type byte of %v changed", typ)
		}
		if TypeByte(Llama, typ) == byte(typ) {
			t.Fatal("llama type byte equals kord-v1's")
		}
	}
	p := fss.Params{Type: fss.DCF, InBits: 32, OutBits: 32}
	if err := CheckShape(Llama, p); err != nil {
		t.Fatal(err)
	}
	if got, want := KeySize(Llama, p), (llama.Params{InBits: 32, OutBits: 32, Group: 1}).KeySize(); got != want {
		t.Fatalf("llama key size %d, want %d", got, want)
	}
	if KeySize(KordV1, p) != p.KeySize() {
		t.Fatal("kord-v1 key size changed")
	}
	for _, bad := range []struct {
		pr Profile
		p  fss.Params
	}{
		{Llama, fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}},
		{Llama, fss.Params{Type: fss.DCF, InBits: 65, OutBits: 8}},
		{Llama, fss.Params{Type: fss.DCF, InBits: 8, OutBits: 0}},
		{Profile(2), p},
	} {
		if CheckShape(bad.pr, bad.p) == nil {
			t.Errorf("%v %v accepted", bad.pr, bad.p)
		}
	}
	for _, s := range []string{"", "kord-v1", "llama"} {
		pr, err := ParseProfile(s)
		if err != nil || (s != "" && pr.String() != s) {
			t.Fatalf("ParseProfile(%q) = %v, %v", s, pr, err)
		}
	}
	if _, err := ParseProfile("llama2"); err == nil {
		t.Fatal("unknown profile name accepted")
	}
}
