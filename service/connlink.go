package service

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"

	"google.golang.org/protobuf/proto"

	pb "github.com/kord-fss/kord/proto/kordpb"
)

// maxConnLinkMsg bounds one peer message read from a connLink: the
// party daemons' gRPC receive limit (daemon.ServerOptions).
const maxConnLinkMsg = 64 << 20

// connLink is one end of a LocalPair's peer link over a byte stream (a
// TCP connection, shaped or not): each message is its 4-byte
// little-endian length and its protobuf encoding. It is what a LocalPair
// uses when its sessions must cross a real (or emulated) network, as in
// kord compare.
type connLink struct {
	c   net.Conn
	wmu sync.Mutex
	tap func(*pb.PeerMsg)
	buf []byte // Recv's read buffer
}

// Send writes m to the connection.
func (l *connLink) Send(m *pb.PeerMsg) error {
	if l.tap != nil {
		l.tap(m)
	}
	b, err := proto.MarshalOptions{}.MarshalAppend(make([]byte, 4, 4+proto.Size(m)), m)
	if err != nil {
		return fmt.Errorf("service: peer message: %w", err)
	}
	binary.LittleEndian.PutUint32(b, uint32(len(b)-4))
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if _, err := l.c.Write(b); err != nil {
		return fmt.Errorf("service: peer link: %w", err)
	}
	return nil
}

// Recv reads the next message from the connection.
func (l *connLink) Recv() (*pb.PeerMsg, error) {
	var h [4]byte
	if _, err := io.ReadFull(l.c, h[:]); err != nil {
		return nil, fmt.Errorf("service: peer link: %w", err)
	}
	n := binary.LittleEndian.Uint32(h[:])
	if n > maxConnLinkMsg {
		return nil, fmt.Errorf("service: peer link: a message of %d bytes exceeds %d", n, maxConnLinkMsg)
	}
	if cap(l.buf) < int(n) {
		l.buf = make([]byte, n)
	}
	b := l.buf[:n]
	if _, err := io.ReadFull(l.c, b); err != nil {
		return nil, fmt.Errorf("service: peer link: %w", err)
	}
	m := new(pb.PeerMsg)
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("service: peer link: %w", err)
	}
	clear(b) // frames crossed in it
	return m, nil
}

// CloseSend half-closes the connection (TCP's FIN after what was
// written): the other end reads what was sent, then the end. A
// connection that cannot half-close says so.
func (l *connLink) CloseSend() error {
	hc, ok := l.c.(interface{ CloseWrite() error })
	if !ok {
		return fmt.Errorf("service: peer link: a %T cannot half-close", l.c)
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return hc.CloseWrite()
}

func (l *connLink) close() { l.c.Close() }
