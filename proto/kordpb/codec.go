package kordpb

import (
	"fmt"
	"math/bits"
	"sync"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// Codec is the protobuf codec of the kord services (the same bytes on the
// wire as gRPC's own), with a buffer pool suited to their messages: a
// batch's key replies go out, and come in, as one message of some hundred
// KiB. gRPC's default pool rounds such a buffer up to 1 MiB and clears all
// of it when it hands it out again; this pool has four sizes per power of
// two and clears a buffer when it is given back, so the key shares and
// additive shares a message held are wiped as soon as gRPC is done with
// it rather than whenever the buffer is next used. Install it with
// grpc.ForceServerCodecV2 and grpc.ForceCodecV2.
func Codec() encoding.CodecV2 { return codec{} }

type codec struct{}

func (codec) Name() string { return "proto" }

func (codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("kordpb: cannot marshal %T", v)
	}
	size := proto.Size(m)
	opts := proto.MarshalOptions{UseCachedSize: true} // the Size just above
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := opts.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	buf := wipePool.Get(size)
	if _, err := opts.MarshalAppend((*buf)[:0], m); err != nil {
		wipePool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, wipePool)}, nil
}

func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("kordpb: cannot unmarshal into %T", v)
	}
	buf := data.MaterializeToBuffer(wipePool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}

// wipePool is a mem.BufferPool whose buffers are all zero while pooled:
// Put clears a buffer's whole capacity, so Get need not.
var wipePool = &clearOnPut{}

// Size classes: up to 256 bytes, then four per power of two up to
// 1<<maxClassBits; larger buffers are not pooled.
const (
	minClassBits = 8
	maxClassBits = 26
	numClasses   = 1 + (maxClassBits-minClassBits)*4
)

type clearOnPut struct {
	pools [numClasses]sync.Pool
}

// class returns the size class for a buffer of n bytes and its capacity;
// ok is false for sizes that are not pooled.
func class(n int) (idx, capacity int, ok bool) {
	if n <= 1<<minClassBits {
		return 0, 1 << minClassBits, true
	}
	k := bits.Len(uint(n - 1)) // 1<<(k-1) < n <= 1<<k
	if k > maxClassBits {
		return 0, 0, false
	}
	base := 1 << (k - 1)
	step := base >> 2
	q := (n - base + step - 1) / step // 1..4
	return 1 + (k-1-minClassBits)*4 + q - 1, base + q*step, true
}

func (p *clearOnPut) Get(n int) *[]byte {
	idx, c, ok := class(n)
	if !ok {
		b := make([]byte, n)
		return &b
	}
	if v, _ := p.pools[idx].Get().(*[]byte); v != nil {
		*v = (*v)[:n]
		return v
	}
	b := make([]byte, n, c)
	return &b
}

func (p *clearOnPut) Put(b *[]byte) {
	c := cap(*b)
	clear((*b)[:c])
	if idx, want, ok := class(c); ok && want == c {
		p.pools[idx].Put(b)
	}
}
