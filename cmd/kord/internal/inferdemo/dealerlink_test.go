package inferdemo

import (
	"bytes"
	"errors"
	"testing"

	"github.com/kord-fss/kord/infer"
)

// TestShipmentFraming: a shipment round-trips; a length over the bound is
// refused before allocation; a short stream is an error.
func TestShipmentFraming(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteShipment(&buf, []byte("kord")); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadShipment(bytes.NewReader(buf.Bytes())); err != nil || string(got) != "kord" {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := ReadShipment(bytes.NewReader(buf.Bytes()[:10])); err == nil {
		t.Fatal("short shipment accepted")
	}
	huge := []byte{0, 0, 0, 0, 0, 0, 0, 0x80}
	if _, err := ReadShipment(bytes.NewReader(huge)); !errors.Is(err, infer.ErrMaterialFormat) {
		t.Fatalf("huge length: %v", err)
	}
}
