package twopc

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"

	"github.com/kord-fss/kord/baseline/ot"
	"github.com/kord-fss/kord/internal/prg"
)

// Session is one party's end of a baseline session: a connection to the
// peer and one IKNP extension in each direction (this party receives on
// one, sends on the other). Its keys are generated one after another with
// Gen; a Session is not safe for concurrent use.
type Session struct {
	party int
	conn  *Conn
	snd   *ot.Sender
	rcv   *ot.Receiver
	rnd   io.Reader
	setup Counters
	// The full tree's level buffers, kept between keys (treeBuffers).
	tree treeBufs
	// slots are GenBatch's concurrent generations: slot i has the OT
	// forks i+1 and its own tree buffers.
	slots []slot
}

type treeBufs struct {
	bufs  [2][]prg.Block
	tbufs [2][]uint8
	vals  [2][]prg.Block
}

type slot struct {
	rcv  *ot.Receiver
	snd  *ot.Sender
	tree treeBufs
}

// NewSession runs the setup with the peer over c: both base-OT batches at
// once (2 exchanges, 128 Chou–Orlandi OTs each way). party is 0 or 1; rnd
// is the randomness (nil = crypto/rand).
func NewSession(ctx context.Context, party int, c net.Conn, rnd io.Reader) (*Session, error) {
	if party != 0 && party != 1 {
		return nil, fmt.Errorf("twopc: party %d is not 0 or 1", party)
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	s := &Session{party: party, conn: NewConn(c), rnd: rnd}
	rs, first, err := ot.NewReceiverSetup(rnd)
	if err != nil {
		return nil, err
	}
	peerFirst, err := s.conn.Exchange(ctx, first)
	if err != nil {
		return nil, fmt.Errorf("twopc: setup, first flight: %w", err)
	}
	snd, flight, err := ot.NewSender(rnd, peerFirst)
	if err != nil {
		return nil, fmt.Errorf("twopc: setup: peer's base-OT point: %w", err)
	}
	peerFlight, err := s.conn.Exchange(ctx, flight)
	if err != nil {
		return nil, fmt.Errorf("twopc: setup, second flight: %w", err)
	}
	rcv, err := rs.Finish(peerFlight)
	if err != nil {
		return nil, fmt.Errorf("twopc: setup: peer's base-OT flight: %w", err)
	}
	s.snd, s.rcv = snd, rcv
	s.setup = s.conn.Counters()
	return s, nil
}

// Party is 0 or 1.
func (s *Session) Party() int { return s.party }

// SetupCost is what the setup cost this party (2 exchanges).
func (s *Session) SetupCost() Counters { return s.setup }

// Counters are this party's totals on the connection, setup included.
func (s *Session) Counters() Counters { return s.conn.Counters() }

// Close closes the connection.
func (s *Session) Close() error { return s.conn.Close() }
