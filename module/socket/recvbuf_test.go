package socket

import (
	"bytes"
	"testing"
)

// A pooled response buffer is wiped when its last reference goes: whole,
// or all but the key regions its holders wipe themselves.
func TestRecvBufWipedOnLastRelease(t *testing.T) {
	msg := bytes.Repeat([]byte{0xAB}, 1000)
	frame := append([]byte{0, 0, 3, 0xE8}, msg...)
	rb, err := readMsgPooled(bytes.NewReader(frame))
	if err != nil {
		t.Fatal(err)
	}
	b := rb.b
	if !bytes.Equal(b, msg) {
		t.Fatal("read the wrong bytes")
	}
	keys := b[100:600]
	rb.KeysWiped(keys)
	rb.KeysWiped([]byte{1, 2, 3}) // not within the buffer: ignored
	rb.Hold()                     // a job
	rb.Release()                  // the results' reference
	if b[0] != 0xAB {
		t.Fatal("wiped while a holder remains")
	}
	clear(keys) // the holder wipes its keys, then releases
	rb.Release()
	for i, c := range b {
		if c != 0 {
			t.Fatalf("byte %d not wiped", i)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a second release of the last reference did not panic")
		}
	}()
	rb.Release()
}

// A released buffer serves a later response of at most its size, and
// pooled buffers are zero beyond what a message fills.
func TestRecvBufReused(t *testing.T) {
	frame := func(n int, c byte) []byte {
		return append([]byte{0, 0, byte(n >> 8), byte(n)}, bytes.Repeat([]byte{c}, n)...)
	}
	rb, err := readMsgPooled(bytes.NewReader(frame(4000, 7)))
	if err != nil {
		t.Fatal(err)
	}
	p := &rb.b[0]
	rb.Release()
	found := false
	for range maxRecvFree {
		rb2, err := readMsgPooled(bytes.NewReader(frame(3000, 9)))
		if err != nil {
			t.Fatal(err)
		}
		if &rb2.b[0] == p {
			found = true
			for i, c := range rb2.b[:cap(rb2.b)] {
				if want := byte(9); i >= 3000 {
					want = 0
					if c != want {
						t.Fatalf("byte %d of the reused buffer: %d, want %d", i, c, want)
					}
				} else if c != want {
					t.Fatalf("byte %d: %d, want %d", i, c, want)
				}
			}
		}
		defer rb2.Release()
		if found {
			break
		}
	}
	if !found {
		t.Fatal("the released buffer was not reused")
	}
}

func TestWipeExcept(t *testing.T) {
	b := bytes.Repeat([]byte{1}, 20)
	wipeExcept(b, [][2]int{{10, 15}, {2, 4}, {3, 6}})
	want := []byte{0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0}
	if !bytes.Equal(b, want) {
		t.Fatalf("%v, want %v", b, want)
	}
}
