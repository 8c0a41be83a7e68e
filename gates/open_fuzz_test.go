package gates

import (
	"encoding/binary"
	"errors"
	"net"
	"testing"
)

// FuzzOpen feeds an arbitrary peer frame to Party.open, the only place a
// gate parses bytes from the other party. Whatever the bytes: no panic; a
// frame of the wrong length is errPeer; a frame of the right length opens
// to values inside their widths.
func FuzzOpen(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5}, uint8(8), uint8(13), uint8(3))
	f.Add([]byte{}, uint8(64), uint8(1), uint8(0))
	f.Add(make([]byte, 17), uint8(64), uint8(64), uint8(1))
	f.Fuzz(func(t *testing.T, peer []byte, w0, w1, n uint8) {
		widths := []int{1 + int(w0)%64, 1 + int(w1)%64}
		count := int(n) % 8
		vecs := [][]uint64{make([]uint64, count), make([]uint64, count)}
		for i := 0; i < count; i++ {
			vecs[0][i], vecs[1][i] = ^uint64(0), uint64(i)
		}
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		go func() {
			var hdr [4]byte
			if _, err := b.Read(hdr[:]); err != nil {
				return
			}
			buf := make([]byte, binary.BigEndian.Uint32(hdr[:]))
			for got := 0; got < len(buf); {
				k, err := b.Read(buf[got:])
				if err != nil {
					return
				}
				got += k
			}
			out := binary.BigEndian.AppendUint32(nil, uint32(len(peer)))
			_, _ = b.Write(append(out, peer...))
		}()
		p := &Party{B: 0, Conn: NewConn(a)}
		o, err := p.open(widths, vecs...)
		want := (count*(widths[0]+widths[1]) + 7) / 8
		if len(peer) != want {
			if !errors.Is(err, errPeer) {
				t.Fatalf("%d-byte frame (want %d): err %v", len(peer), want, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range o {
			for _, x := range v {
				if x&^mask(widths[j]) != 0 {
					t.Fatalf("opened %#x exceeds %d bits", x, widths[j])
				}
			}
		}
	})
}
