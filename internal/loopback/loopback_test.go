package loopback

import (
	"io"
	"net"
	"testing"
)

// TestPairCarriesBothWays: what one end writes the other reads, in both
// directions, and both ends are TCP on loopback.
func TestPairCarriesBothWays(t *testing.T) {
	a, b, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	for _, c := range []net.Conn{a, b} {
		ta, ok := c.RemoteAddr().(*net.TCPAddr)
		if !ok || !ta.IP.IsLoopback() {
			t.Fatalf("end %v is not TCP on loopback", c.RemoteAddr())
		}
	}
	for _, dir := range [][2]net.Conn{{a, b}, {b, a}} {
		msg := []byte("kord")
		go dir[0].Write(msg)
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(dir[1], got); err != nil || string(got) != "kord" {
			t.Fatalf("read %q, %v", got, err)
		}
	}
}
