package socket

import (
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkSealedMemfd: making, filling and sealing one slab's memfd and
// mapping it read-only at the party and reading it once (about a DPF-32
// batch of 1024 keys).
func BenchmarkSealedMemfd(b *testing.B) {
	keys := make([]byte, 1024*600)
	dst := make([]byte, len(keys))
	b.SetBytes(int64(len(keys)))
	for b.Loop() {
		fd, err := sealedMemfd(keys)
		if err != nil {
			b.Fatal(err)
		}
		m, err := mapSealed(fd, len(keys))
		if err != nil {
			b.Fatal(err)
		}
		copy(dst, m) // the party reads every key once
		unmapSlab(m)
		closeFD(fd)
	}
}

// BenchmarkSlabBytesSocket is BenchmarkSealedMemfd's slab over a Unix
// socket pair as bytes (the byte path: one write, one read into a reused
// buffer), for the ratio of the two in one run.
func BenchmarkSlabBytesSocket(b *testing.B) {
	keys := make([]byte, 1024*600)
	dst := make([]byte, len(keys))
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, sendBuffer)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < b.N; i++ {
			for off := 0; off < len(keys); {
				n, err := unix.Write(fds[0], keys[off:])
				if err != nil {
					return
				}
				off += n
			}
		}
	}()
	b.SetBytes(int64(len(keys)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for off := 0; off < len(dst); {
			n, err := unix.Read(fds[1], dst[off:])
			if err != nil || n == 0 {
				b.Fatal(err)
			}
			off += n
		}
	}
	<-done
}
