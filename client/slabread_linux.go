package client

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// readSlab reads fd, which must be a memfd of exactly size bytes carrying
// every seal (socket.CheckSealed), into a buffer of kord's wiping pool;
// release wipes the buffer and gives it back. fd stays the caller's.
func readSlab(fd, size int) (keys []byte, release func(), err error) {
	if err := socket.CheckSealed(fd, size); err != nil {
		return nil, nil, err
	}
	pool := pb.BufferPool()
	buf := pool.Get(size)
	b := (*buf)[:size]
	for off := 0; off < size; {
		n, err := unix.Pread(fd, b[off:], int64(off))
		if err != nil || n == 0 {
			clear(b[:off])
			pool.Put(buf)
			if err == nil {
				err = fmt.Errorf("%d of %d bytes", off, size)
			}
			return nil, nil, fmt.Errorf("client: reading a slab's memfd: %w", err)
		}
		off += n
	}
	return b, func() { pool.Put(buf) }, nil
}
