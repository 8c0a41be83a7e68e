package client

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kord-fss/kord/internal/fdpass"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// memfd returns a memfd holding b, sealed with seals (0: none).
func memfd(t *testing.T, b []byte, seals int) int {
	t.Helper()
	fd, err := unix.MemfdCreate("test-slab", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Skipf("memfd_create: %v", err)
	}
	if _, err := unix.Pwrite(fd, b, 0); err != nil {
		t.Fatal(err)
	}
	if seals != 0 {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
			t.Fatal(err)
		}
	}
	return fd
}

// passed sends fd over a Unix socket pair and reads it into a fresh
// Inbox, as a party's hand-off reaches a client; fd is closed.
func passed(t *testing.T, fd int) (*fdpass.Inbox, fdpass.ID) {
	t.Helper()
	id, err := fdpass.IDOf(fd)
	if err != nil {
		t.Fatal(err)
	}
	a, b, err := fdpass.SocketPair()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	srv, cl := fdpass.Server(a).(*fdpass.Conn), b
	in := fdpass.NewInbox()
	t.Cleanup(in.Close)
	rd := fdpass.Client(cl, in)
	if err := srv.Send(fd); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Write([]byte("message")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := io.ReadFull(rd, buf); err != nil || string(buf) != "message" {
		t.Fatalf("read %q, %v", buf, err)
	}
	return in, id
}

const allSeals = unix.F_SEAL_WRITE | unix.F_SEAL_GROW | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL

// TestHandedKeysRefusals: a message naming a memfd for its keys is read only
// when that memfd came on the connection, carries every seal and has the
// message's size, and only on a stream that asked for slab_fds; else it
// is refused with an error naming what is wrong. A good one reads in
// place, and reads zero once the message is recycled.
func TestHandedKeysRefusals(t *testing.T) {
	keys := bytes.Repeat([]byte{7, 1, 2, 3}, 1000)
	msg := func(id fdpass.ID, size int, inline []byte) *pb.PooledKeyReplies {
		return &pb.PooledKeyReplies{M: &pb.KeyReplies{Packed: &pb.PackedReplies{Ids: []uint64{1}, Keys: inline,
			KeysFd: &pb.SlabFD{Dev: id.Dev, Inode: id.Inode, Size: uint64(size)}}}}
	}
	for _, c := range []struct {
		name  string
		seals int
		size  int
		other bool // name another file than the one passed
		asked bool
		keys  []byte // inline keys too
		want  string
	}{
		{name: "not asked", seals: allSeals, size: len(keys), want: "did not ask"},
		{name: "not passed", seals: allSeals, size: len(keys), asked: true, other: true, want: "did not come"},
		{name: "unsealed", size: len(keys), asked: true, want: "seals"},
		{name: "write not sealed", seals: unix.F_SEAL_GROW | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL, size: len(keys), asked: true, want: "seals"},
		{name: "short", seals: allSeals, size: len(keys) - 1, asked: true, want: "bytes, want"},
		{name: "long", seals: allSeals, size: len(keys) + 1, asked: true, want: "bytes, want"},
		{name: "too large", seals: allSeals, size: maxHandedKeys + 1, asked: true, want: "at most"},
		{name: "inline too", seals: allSeals, size: len(keys), asked: true, keys: []byte{1}, want: "both as bytes"},
		{name: "good", seals: allSeals, size: len(keys), asked: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, id := passed(t, memfd(t, keys, c.seals))
			s := &Stream{}
			if c.asked {
				s.fds = in
			}
			name := id
			if c.other {
				name.Inode++
			}
			pm := msg(name, c.size, c.keys)
			err := s.readHandedKeys(pm)
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got %v, want an error saying %q", err, c.want)
				}
				if pm.OwnKeys() {
					t.Fatal("a refused message holds a buffer of keys")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := pm.M.Packed.Keys
			if !bytes.Equal(got, keys) {
				t.Fatal("the keys read differ from the memfd's")
			}
			if in.Len() != 0 {
				t.Fatalf("%d fds left in the inbox", in.Len())
			}
			pm.Recycle()
			if bytes.Count(got, []byte{0}) != len(got) {
				t.Fatal("the keys read were not wiped by Recycle")
			}
		})
	}
}
