// Package socket carries the module's Device interface over a local Unix
// socket: the module daemon (kord module) runs a Server, and a party's host
// holds a Client, which implements module.Device and module.Syncer.
//
// Each message is a 4-byte big-endian length and a protobuf ModuleRequest
// or ModuleResponse (proto/kord/v1/module.proto). A request is a list of
// calls run in order, so a host can hand a module a whole batch — own
// shares, the peer's frames and the collects — in one round trip. The
// socket carries only what the Device interface does: never α, β, a root
// seed or a channel key.
package socket

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"
)

// MaxMessage bounds one message on the socket.
const MaxMessage = 64 << 20

// ErrTooLarge marks a length prefix over MaxMessage.
var ErrTooLarge = errors.New("socket: message too large")

// appendMsg appends m's length prefix and encoding to dst.
func appendMsg(dst []byte, m proto.Message) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst, err := proto.MarshalOptions{}.MarshalAppend(dst, m)
	if err != nil {
		return dst[:start], err
	}
	n := len(dst) - start - 4
	if n > MaxMessage {
		return dst[:start], ErrTooLarge
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(n))
	return dst, nil
}

// readMsgInto reads one message into buf (grown as needed) and returns it.
func readMsgInto(r io.Reader, buf []byte) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return buf[:0], err
	}
	n, err := msgLen(h)
	if err != nil {
		return buf[:0], err
	}
	if uint32(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return buf[:0], shortMsg(err)
	}
	return buf, nil
}

// msgLen checks a length prefix.
func msgLen(h [4]byte) (uint32, error) {
	n := binary.BigEndian.Uint32(h[:])
	if n > MaxMessage {
		return 0, fmt.Errorf("%w: %d bytes (max %d)", ErrTooLarge, n, MaxMessage)
	}
	return n, nil
}

func shortMsg(err error) error { return fmt.Errorf("socket: short message: %w", err) }
