package fdpass

import (
	"io"
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// pair returns a connected server Conn and a client Conn with a fresh
// Inbox, over a Unix socket pair.
func pair(t *testing.T) (srv *Conn, cl net.Conn, in *Inbox) {
	t.Helper()
	a, b, err := SocketPair()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	in = NewInbox()
	t.Cleanup(in.Close)
	return Server(a).(*Conn), Client(b, in), in
}

// memfd returns a fresh memfd and its ID.
func memfd(t *testing.T) (int, ID) {
	t.Helper()
	fd, err := unix.MemfdCreate("fdpass-test", unix.MFD_CLOEXEC)
	if err != nil {
		t.Skipf("memfd_create: %v", err)
	}
	id, err := IDOf(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fd, id
}

func isOpen(fd int) bool {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == nil
}

// TestPassMany: more fds than one byte carries go with the bytes of one
// write, every one arrives in the Inbox by its ID, and the bytes arrive
// unchanged.
func TestPassMany(t *testing.T) {
	srv, cl, in := pair(t)
	const n = 2*maxPerWrite + 5
	var ids []ID
	for range n {
		fd, id := memfd(t)
		ids = append(ids, id)
		if err := srv.Send(fd); err != nil {
			t.Fatal(err)
		}
	}
	msg := []byte("one message carrying the fds")
	if _, err := srv.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(cl, got); err != nil || string(got) != string(msg) {
		t.Fatalf("read %q, %v", got, err)
	}
	if in.Len() != n {
		t.Fatalf("%d fds received, want %d", in.Len(), n)
	}
	for i, id := range ids {
		fd, ok := in.Take(id)
		if !ok {
			t.Fatalf("fd %d (%+v) not in the inbox", i, id)
		}
		if got, _ := IDOf(fd); got != id {
			t.Fatalf("fd %d: took %+v for %+v", i, got, id)
		}
		unix.Close(fd)
		if _, ok := in.Take(id); ok {
			t.Fatalf("fd %d taken twice", i)
		}
	}
}

// TestShortWriteKeepsFDs: fds queued beyond what a one-byte write can
// carry wait for the next write.
func TestShortWriteKeepsFDs(t *testing.T) {
	srv, cl, in := pair(t)
	for range maxPerWrite + 1 {
		fd, _ := memfd(t)
		srv.Send(fd)
	}
	for _, b := range []string{"a", "b"} {
		if _, err := srv.Write([]byte(b)); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(cl, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if in.Len() != maxPerWrite+1 {
		t.Fatalf("%d fds received, want %d", in.Len(), maxPerWrite+1)
	}
}

// TestCloseClosesQueued: an fd queued on a connection that closes before
// it was written is closed, and Send after Close refuses and closes.
func TestCloseClosesQueued(t *testing.T) {
	srv, _, _ := pair(t)
	fd, _ := memfd(t)
	srv.Send(fd)
	srv.Close()
	if isOpen(fd) {
		t.Fatal("a queued fd outlived its connection")
	}
	fd2, _ := memfd(t)
	if err := srv.Send(fd2); err == nil {
		t.Fatal("Send on a closed connection")
	}
	if isOpen(fd2) {
		t.Fatal("an fd refused by Send was left open")
	}
}

// TestInboxBound: an Inbox holds at most maxInbox fds not taken, closing
// the oldest first; Close closes the rest.
func TestInboxBound(t *testing.T) {
	in := NewInbox()
	var fds []int
	var ids []ID
	for range maxInbox + 3 {
		fd, id := memfd(t)
		d, err := unix.Dup(fd)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		fds, ids = append(fds, d), append(ids, id)
		in.add(d)
	}
	if in.Len() != maxInbox {
		t.Fatalf("%d fds held, want %d", in.Len(), maxInbox)
	}
	for i := range 3 {
		if _, ok := in.Take(ids[i]); ok {
			t.Fatalf("fd %d, among the oldest, still held", i)
		}
	}
	fd, ok := in.Take(ids[3])
	if !ok {
		t.Fatal("the oldest fd within the bound was dropped")
	}
	unix.Close(fd)
	last := len(fds) - 1
	in.Close()
	if isOpen(fds[last]) {
		t.Fatal("Close left an fd open")
	}
}
