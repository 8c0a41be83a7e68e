package client

import (
	"fmt"
	"sync/atomic"

	"github.com/kord-fss/kord/internal/fdpass"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// mapKeys makes a message whose keys came as a sealed memfd
// (PackedReplies.keys_fd) read them in place: it takes the memfd the
// party passed on the connection, checks its seals and size, and maps
// it read-only as the message's keys. A message naming a memfd that did
// not come, or one that is not sealed or not of its size, is refused.
func (s *Stream) mapKeys(pm *pb.PooledKeyReplies) error {
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
	if ref.Size == 0 || ref.Size > maxMappedKeys {
		return fmt.Errorf("client: a message's keys as a memfd of %d bytes (at most %d)", ref.Size, maxMappedKeys)
	}
	keys, release, err := mapSlab(fd, int(ref.Size))
	if err != nil {
		return fmt.Errorf("client: a message's keys as a memfd: %w", err)
	}
	pm.SetMappedKeys(keys, release)
	mappedMessages.Add(1)
	return nil
}

// mappedMessages counts the messages whose keys came as a memfd.
var mappedMessages atomic.Uint64

// MappedMessages is how many messages this process's streams have read
// whose keys came as a memfd (a same-host party's slab hand-off).
func MappedMessages() uint64 { return mappedMessages.Load() }

// maxMappedKeys bounds a message's keys as a memfd: as many as a message
// may carry as bytes.
const maxMappedKeys = 256 << 20
