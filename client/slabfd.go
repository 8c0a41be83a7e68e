package client

import (
	"fmt"
	"sync/atomic"

	"github.com/kord-fss/kord/internal/fdpass"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// readHandedKeys reads the keys of a message that came as a sealed memfd
// (PackedReplies.keys_fd): it takes the memfd the party passed on the
// connection, checks its seals and size, and reads it, in one copy, into
// a buffer of kord's wiping pool that becomes the message's keys (wiped
// when the batch is released). A message naming a memfd that did not
// come, or one that is not sealed or not of its size, is refused.
//
// Reading beats mapping here: on the measured 2-core VM, mapping each
// memfd and mapping zero pages over it at release cost the client about
// twice its CPU per pair on the byte path, reading it about two thirds
// (BENCHMARKS.md, issue 34).
func (s *Stream) readHandedKeys(pm *pb.PooledKeyReplies) error {
	pk := pm.M.GetPacked()
	ref := pk.GetKeysFd()
	if ref == nil {
		return nil
	}
	if s.fds == nil {
		return fmt.Errorf("client: the party sent keys as a memfd (inode %d), which this stream did not ask for", ref.Inode)
	}
	if len(pk.Keys) > 0 {
		return fmt.Errorf("client: the party sent keys both as bytes and as a memfd (inode %d)", ref.Inode)
	}
	fd, ok := s.fds.Take(fdpass.ID{Dev: ref.Dev, Inode: ref.Inode})
	if !ok {
		return fmt.Errorf("client: the party named a memfd (device %d, inode %d) for a message's keys that did not come with it", ref.Dev, ref.Inode)
	}
	defer socket.CloseFD(fd)
	if ref.Size == 0 || ref.Size > maxHandedKeys {
		return fmt.Errorf("client: a message's keys as a memfd of %d bytes (at most %d)", ref.Size, maxHandedKeys)
	}
	keys, release, err := readSlab(fd, int(ref.Size))
	if err != nil {
		return fmt.Errorf("client: a message's keys as a memfd: %w", err)
	}
	pm.SetOwnKeys(keys, release)
	handedMessages.Add(1)
	return nil
}

// handedMessages counts the messages whose keys came as a memfd.
var handedMessages atomic.Uint64

// HandedMessages is how many messages this process's streams have read
// whose keys came as a memfd (a same-host party's slab hand-off).
func HandedMessages() uint64 { return handedMessages.Load() }

// maxHandedKeys bounds a message's keys as a memfd: as many as a message
// may carry as bytes.
const maxHandedKeys = 256 << 20
