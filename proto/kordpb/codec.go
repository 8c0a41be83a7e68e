package kordpb

import (
	"fmt"
	"math/bits"
	"sync"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/internal/pbwire"
)

// Codec is the protobuf codec of the kord services (the same bytes on the
// wire as gRPC's own), with a buffer pool suited to their messages: a
// batch's key replies go out, and come in, as one message of some hundred
// KiB. gRPC's default pool rounds such a buffer up to 1 MiB and clears all
// of it when it hands it out again; this pool has four sizes per power of
// two and clears a buffer when it is given back, so the key shares and
// additive shares a message held are wiped as soon as gRPC is done with
// it rather than whenever the buffer is next used. A KeyReply (the answer
// to a unary Get, which gRPC marshals after the handler has returned) is
// always encoded into such a buffer, and Marshal wipes its key shares,
// additive shares and evaluation shares once they are encoded: a party
// hands a reply out once and has no later point at which to wipe it.
// Install it with grpc.ForceServerCodecV2 and grpc.ForceCodecV2.
func Codec() encoding.CodecV2 { return codec{} }

type codec struct{}

func (codec) Name() string { return "proto" }

func (codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("kordpb: cannot marshal %T", v)
	}
	if kr, ok := v.(*KeyReplies); ok && kr.Packed != nil {
		if done, ok := lent.LoadAndDelete(kr.Packed); ok {
			out, err := marshalLent(kr, done.(func()))
			if out != nil || err != nil {
				return out, err
			}
			// Not in the lent shape: copied below, then handed back.
			defer done.(func())()
		}
	}
	size := proto.Size(m)
	opts := proto.MarshalOptions{UseCachedSize: true} // the Size just above
	reply, isReply := v.(*KeyReply)
	if mem.IsBelowBufferPoolingThreshold(size) && !isReply {
		b, err := opts.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	n := size
	if isReply {
		n = max(n, minPooled) // gRPC pools (and so frees to us) only buffers this large
	}
	buf := wipePool.Get(n)
	if _, err := opts.MarshalAppend((*buf)[:0], m); err != nil {
		wipePool.Put(buf)
		return nil, err
	}
	*buf = (*buf)[:size]
	if isReply {
		wipeReply(reply)
	}
	return mem.BufferSlice{mem.NewBuffer(buf, wipePool)}, nil
}

// lent holds the PackedReplies whose keys the next Marshal may send as
// they are (LendKeys), with what to call once gRPC is done with them.
var lent sync.Map // *PackedReplies → func()

// LendKeys lets the next Marshal of a KeyReplies carrying pk put pk.Keys
// into the encoding as they are, without copying them: the keys become
// the encoding's last buffer, which gRPC writes out and then frees, and
// done is called then (also when the message is dropped unwritten, or
// when Marshal copied them after all, once copied). Until done the
// caller must neither change nor wipe pk.Keys; done typically wipes them.
// If the message is never marshalled, Unlend takes the loan back.
func LendKeys(pk *PackedReplies, done func()) { lent.Store(pk, done) }

// Unlend takes back a loan Marshal did not take (the message was not
// sent): it returns its done, or nil when Marshal took the keys (and will
// call done itself).
func Unlend(pk *PackedReplies) func() {
	if done, ok := lent.LoadAndDelete(pk); ok {
		return done.(func())
	}
	return nil
}

// marshalLent encodes kr (packed replies only) with its keys last, as a
// buffer of its own that is kr.Packed.Keys itself: the other fields go
// into a pooled buffer, then the keys field's tag and length; protobuf
// readers take fields in any order. It returns nil for a message of
// another shape (replies too, or keys too short for gRPC to free them
// back to a pool, which is what calls done).
func marshalLent(kr *KeyReplies, done func()) (mem.BufferSlice, error) {
	pk := kr.Packed
	keys := pk.Keys
	if len(kr.Replies) != 0 || len(kr.unknownFields) != 0 || len(keys) < minPooled {
		return nil, nil
	}
	pk.Keys = nil
	defer func() { pk.Keys = keys }()
	inner := proto.Size(pk)
	pkLen := inner + protowire.SizeTag(4) + protowire.SizeBytes(len(keys))
	headLen := protowire.SizeTag(2) + protowire.SizeVarint(uint64(pkLen)) + inner + protowire.SizeTag(4) + protowire.SizeVarint(uint64(len(keys)))
	buf := wipePool.Get(max(headLen, minPooled)) // pooled, so wiped when freed: it holds shares
	b := protowire.AppendTag((*buf)[:0], 2, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(pkLen))
	b, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, pk)
	if err != nil {
		wipePool.Put(buf)
		return nil, err
	}
	b = protowire.AppendTag(b, 4, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(len(keys)))
	*buf = b
	k := keys[:len(keys):len(keys)]
	return mem.BufferSlice{mem.NewBuffer(buf, wipePool), mem.NewBuffer(&k, &lender{done: done})}, nil
}

// lender is the "pool" of lent keys: gRPC's Put hands them back, once.
type lender struct {
	once sync.Once
	done func()
}

func (l *lender) Get(n int) *[]byte {
	b := make([]byte, n)
	return &b
}

func (l *lender) Put(*[]byte) { l.once.Do(l.done) }

// minPooled is the smallest buffer gRPC hands back to its pool when freed.
var minPooled = func() int {
	n := 1
	for mem.IsBelowBufferPoolingThreshold(n) {
		n <<= 1
	}
	return n
}()

// wipeReply overwrites the secret parts of r's key shares.
func wipeReply(r *KeyReply) {
	for _, k := range r.Keys {
		if k != nil {
			clear(k.Key)
			clear(k.Evals)
			k.AlphaShare, k.BetaShare = 0, 0
			if c := k.Corr; c != nil {
				clear(c.A)
				clear(c.R)
				clear(c.Z)
				clear(c.Packs)
			}
		}
	}
}

// PooledKeyReplies receives a KeyReplies (pass it to RecvMsg) whose keys,
// in the usual packed shape, are slices of a pooled buffer rather than of
// a fresh one: once nothing refers to them any more (the keys parsed),
// Release wipes the buffer and gives it back for the next message, which
// saves allocating and clearing a buffer of some hundred KiB per message.
// Without Release the buffer is left to the garbage collector.
type PooledKeyReplies struct {
	M   *KeyReplies
	buf *[]byte
	// spare and spareM are a recycled message whose lists' memory the
	// next Unmarshal into this value reuses (Recycle).
	spare  *PackedReplies
	spareM *KeyReplies
	// release gives back the buffer M.Packed.Keys is, when the keys came
	// as a memfd that the caller read into a buffer of its own
	// (SetOwnKeys); release wipes it.
	release func()
}

// SetOwnKeys makes keys, a buffer of the caller's holding the message's
// keys (read from the memfd they came in: PackedReplies.keys_fd), the
// message's keys; Release and Recycle call release (once), which wipes
// them, instead of wiping them here.
func (p *PooledKeyReplies) SetOwnKeys(keys []byte, release func()) {
	p.M.Packed.Keys = keys
	p.release = release
}

// OwnKeys reports whether the message's keys are the caller's buffer
// (SetOwnKeys).
func (p *PooledKeyReplies) OwnKeys() bool { return p.release != nil }

// ReleaseOwnKeys gives back the caller's buffer of the message's keys, if
// any (SetOwnKeys), leaving the message without keys; the rest of it is
// untouched.
func (p *PooledKeyReplies) ReleaseOwnKeys() {
	if p.release == nil {
		return
	}
	if p.M != nil && p.M.Packed != nil {
		p.M.Packed.Keys = nil
	}
	r := p.release
	p.release = nil
	r()
}

// Recycle is Release for a caller that holds no reference to M or to any
// slice of it: it also wipes M's parallel lists (counters, additive and
// evaluation shares, lengths) and any key bytes outside the pooled buffer,
// and keeps the lists' memory for the next message read into p, so that a
// stream of messages read into one PooledKeyReplies allocates no lists
// once their sizes have settled.
func (p *PooledKeyReplies) Recycle() {
	p.ReleaseOwnKeys()
	m := p.M
	if m == nil {
		p.Release()
		return
	}
	for _, r := range m.Replies {
		for _, k := range r.GetKeys() {
			clear(k.Key)
			clear(k.Evals)
			k.AlphaShare, k.BetaShare = 0, 0
			if c := k.Corr; c != nil {
				clear(c.A)
				clear(c.R)
				clear(c.Z)
				clear(c.Packs)
			}
		}
	}
	if pk := m.Packed; pk != nil {
		if p.buf == nil {
			clear(pk.Keys) // not in the pooled buffer that Release wipes
		}
		wipeLists(pk)
		pk.Keys = nil
		p.spare = pk
	}
	m.Reset()
	p.spareM = m
	p.Release()
}

// Release wipes and recycles the buffer M's keys are slices of; M must
// not be used after it. It is safe to call more than once.
func (p *PooledKeyReplies) Release() {
	p.ReleaseOwnKeys()
	if p.buf != nil {
		wipePool.Put(p.buf)
		p.buf = nil
	}
	p.M = nil
}

func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	if pm, ok := v.(*PooledKeyReplies); ok {
		return unmarshalPooled(data, pm)
	}
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("kordpb: cannot unmarshal into %T", v)
	}
	if kr, ok := v.(*KeyReplies); ok && data.Len() >= 1<<12 {
		// A batch's keys: read into a buffer of their own that the keys
		// are slices of, instead of joining the frames in a pooled
		// buffer and copying the keys out of it (one copy instead of two,
		// and no wipe of a second copy).
		b := data.Materialize()
		if decodeKeyReplies(b, kr) {
			return nil
		}
		kr.Reset()
		err := proto.Unmarshal(b, kr)
		clear(b)
		return err
	}
	buf := data.MaterializeToBuffer(wipePool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}

// wipeLists overwrites pk's parallel lists with zeros.
func wipeLists(pk *PackedReplies) {
	clear(pk.Ids)
	clear(pk.Counts)
	clear(pk.Counters)
	clear(pk.KeyLens)
	clear(pk.AlphaShares)
	clear(pk.BetaShares)
	clear(pk.Evals)
	clear(pk.EvalLens)
}

func unmarshalPooled(data mem.BufferSlice, pm *PooledKeyReplies) error {
	spare, m := pm.spare, pm.spareM
	pm.Release()
	pm.spare, pm.spareM = nil, nil
	if m == nil {
		m = &KeyReplies{}
	}
	pm.M = m
	if data.Len() >= 1<<12 {
		buf := wipePool.Get(data.Len())
		data.CopyTo(*buf)
		if decodeKeyRepliesInto(*buf, pm.M, spare) {
			pm.buf = buf
			return nil
		}
		wipePool.Put(buf)
		pm.M.Reset()
	}
	buf := data.MaterializeToBuffer(wipePool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), pm.M)
}

// wipePool is a mem.BufferPool whose buffers are all zero while pooled:
// Put clears a buffer's whole capacity, so Get need not.
var wipePool = &clearOnPut{}

// BufferPool is the pool for gRPC's own transport buffers (install it
// with experimental.BufferPool and experimental.WithBufferPool): the
// HTTP/2 data frames a batch's keys arrive in are copies of key shares,
// and gRPC's default pool clears a buffer only when it hands it out again,
// so those copies would stay in memory until then. This pool clears a
// buffer as soon as gRPC frees it (the same one clear per buffer, done
// while the buffer is still in cache).
func BufferPool() mem.BufferPool { return wipePool }

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

// decodeKeyReplies reads b into m when it is a KeyReplies in the usual
// shape — only packed, with each of its fields once and its integers
// packed — with keys a slice of b; it returns false for anything else,
// which proto.Unmarshal then reads (so nothing is accepted that it would
// refuse).
func decodeKeyReplies(b []byte, m *KeyReplies) bool { return decodeKeyRepliesInto(b, m, nil) }

// decodeKeyRepliesInto is decodeKeyReplies reusing the lists of spare
// (nil: none) for m.Packed.
func decodeKeyRepliesInto(b []byte, m *KeyReplies, spare *PackedReplies) bool {
	var pk *PackedReplies
	if !pbwire.Each(b, 2, func(f pbwire.Field) bool {
		v, ok := f.Bytes()
		if !ok || f.Num != 2 {
			return false
		}
		pk = decodePacked(v, spare)
		return pk != nil
	}) {
		return false
	}
	m.Reset()
	m.Packed = pk
	return true
}

// decodeSlabFD reads a SlabFD body.
func decodeSlabFD(b []byte) (*SlabFD, bool) {
	s := &SlabFD{}
	ok := pbwire.Each(b, 3, func(f pbwire.Field) bool {
		var ok bool
		switch f.Num {
		case 1:
			s.Dev, ok = f.Uint64()
		case 2:
			s.Inode, ok = f.Uint64()
		case 3:
			s.Size, ok = f.Uint64()
		}
		return ok
	})
	return s, ok
}

// decodePacked reads a PackedReplies body; with spare (not nil) it reads
// into spare, appending to its emptied lists, where absent fields are then
// empty rather than nil (the same message to proto.Equal).
func decodePacked(b []byte, spare *PackedReplies) *PackedReplies {
	pk := &PackedReplies{}
	if spare != nil {
		pk = spare
		ids, counts, counters, keyLens := pk.Ids[:0], pk.Counts[:0], pk.Counters[:0], pk.KeyLens[:0]
		as, bs, evals, evalLens := pk.AlphaShares[:0], pk.BetaShares[:0], pk.Evals[:0], pk.EvalLens[:0]
		pk.Reset()
		pk.Ids, pk.Counts, pk.Counters, pk.KeyLens = ids, counts, counters, keyLens
		pk.AlphaShares, pk.BetaShares, pk.Evals, pk.EvalLens = as, bs, evals, evalLens
	}
	if !pbwire.Each(b, 11, func(f pbwire.Field) bool {
		var ok bool
		switch f.Num {
		case 1:
			pk.Ids, ok = f.AppendPacked64(pk.Ids)
		case 2:
			pk.Counts, ok = f.AppendPacked32(pk.Counts)
		case 3:
			pk.Counters, ok = f.AppendPacked64(pk.Counters)
		case 4:
			pk.Keys, ok = f.Bytes()
		case 5:
			pk.KeyLens, ok = f.AppendPacked32(pk.KeyLens)
		case 6:
			pk.AlphaShares, ok = f.AppendPacked64(pk.AlphaShares)
		case 7:
			pk.BetaShares, ok = f.AppendPacked64(pk.BetaShares)
		case 8:
			pk.Evals, ok = f.AppendPacked64(pk.Evals)
		case 9:
			pk.EvalLens, ok = f.AppendPacked32(pk.EvalLens)
		case 10:
			pk.KeyStride, ok = f.Uint32()
		case 11:
			var v []byte
			if v, ok = f.Bytes(); ok {
				pk.KeysFd, ok = decodeSlabFD(v)
			}
		}
		return ok
	}) {
		wipeLists(pk)
		return nil
	}
	return pk
}
