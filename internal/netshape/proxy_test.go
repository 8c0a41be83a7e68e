package netshape

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// A proxy forwards both directions unchanged, shaped, and counts every
// byte it forwarded.
func TestProxyForwardsAndCounts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // echo
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
	x, err := NewProxy(l.Addr().String(), Profile{Name: "test", BitsPerSecond: 1e9, RTT: 200 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", x.Addr())
	if err != nil {
		t.Fatal(err)
	}
	msg := bytes.Repeat([]byte("kord"), 5000)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("the echo through the proxy differs")
	}
	c.Close()
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if n := x.Bytes(); n != 2*int64(len(msg)) {
		t.Fatalf("counted %d bytes, want %d (both directions)", n, 2*len(msg))
	}
}
