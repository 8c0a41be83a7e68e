package infer

import (
	"net"

	"github.com/kord-fss/kord/internal/loopback"
)

// LoopbackPair is the two ends of one unshaped TCP connection on
// loopback, Nagle off: the online parties' link when both run in this
// process (RunStream without StreamConfig.Pair). Shaped links are the
// runners' (cmd/kord/internal/inferdemo, on internal/netshape).
func LoopbackPair() (a, b net.Conn, err error) { return loopback.Pair() }
