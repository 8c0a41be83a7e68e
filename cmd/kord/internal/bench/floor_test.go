package bench

import "testing"

// TestTransportFloor moves a few keys' bytes over both links and gets a
// positive rate; a batch bigger than the keys and an odd size work too.
func TestTransportFloor(t *testing.T) {
	for _, c := range []struct {
		keys, size, batch int
		unix              bool
	}{{1000, 600, 64, false}, {1000, 600, 64, true}, {7, 333, 1024, false}} {
		r, err := transportFloor(c.keys, c.size, c.batch, c.unix)
		if err != nil || r <= 0 {
			t.Errorf("%+v: %v keys/s, %v", c, r, err)
		}
	}
}
