package twopc

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/netshape"
)

// FuzzGenFrames plays party 0 against a peer that answers every exchange
// with fuzzed bytes (2-byte length, then that many bytes, per frame):
// Gen (even l) or a GenBatch of two (odd l) returns keys or an error,
// never panics or hangs.
func FuzzGenFrames(f *testing.F) {
	ctx := context.Background()
	pr, err := NewPair(ctx, netshape.Profile{Name: "loopback"}, [2]io.Reader{})
	if err != nil {
		f.Fatal(err)
	}
	defer pr.Close()
	base := pr.S[0]
	f.Add([]byte{0, 0}, uint8(3), false)
	f.Add(make([]byte, 600), uint8(1), true)
	f.Add([]byte{0x40, 0x01, 1, 2, 3}, uint8(8), true)
	f.Fuzz(func(t *testing.T, data []byte, l uint8, dcf bool) {
		p := fss.Params{Type: fss.DPF, InBits: 1 + int(l%10), OutBits: 16}
		if dcf {
			p.Type = fss.DCF
		}
		a, b := net.Pipe()
		defer a.Close()
		go func() {
			defer b.Close()
			for {
				if _, err := readFrame(b); err != nil {
					return
				}
				var body []byte
				if len(data) >= 2 {
					n := min(int(binary.LittleEndian.Uint16(data)), len(data)-2)
					body, data = data[2:2+n], data[2+n:]
				}
				frame := binary.LittleEndian.AppendUint32(nil, uint32(len(body)))
				if _, err := b.Write(append(frame, body...)); err != nil {
					return
				}
			}
		}()
		s := &Session{party: 0, conn: NewConn(a), snd: base.snd, rcv: base.rcv, rnd: base.rnd}
		gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if l%2 == 0 {
			if k, _, err := s.Gen(gctx, p, 1, 2); err == nil && k.Params() != p {
				t.Fatalf("a key of shape %v for %v", k.Params(), p)
			}
			return
		}
		// A batch of two: the combined frames' parser.
		if ks, _, err := s.GenBatch(gctx, p, []uint64{1, 0}, []uint64{2, 3}); err == nil && len(ks) != 2 {
			t.Fatalf("%d keys for a batch of 2", len(ks))
		}
	})
}
