package twopc

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/kord-fss/kord/fss"
)

// MaxBatch bounds the keys of one GenBatch call.
const MaxBatch = 256

// combiner runs several key generations in lockstep over one connection:
// in each round every generation still running hands in its frame, and
// one exchange carries them all (each with a 4-byte length, in slot
// order). A generation that finishes leaves; both parties run the same
// shapes in the same slots, so both see the same set in every round.
type combiner struct {
	conn   *Conn
	mu     sync.Mutex
	cond   *sync.Cond
	active int
	out    map[int][]byte
	in     map[int][]byte
	round  int
	err    error
}

func newCombiner(conn *Conn, n int) *combiner {
	c := &combiner{conn: conn, active: n, out: map[int][]byte{}, in: map[int][]byte{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// exchange is slot's Exchange.
func (c *combiner) exchange(ctx context.Context, slot int, out []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	c.out[slot] = out
	round := c.round
	c.flushIfReady(ctx)
	for c.round == round && c.err == nil {
		c.cond.Wait()
	}
	if c.err != nil {
		return nil, c.err
	}
	in := c.in[slot]
	delete(c.in, slot)
	return in, nil
}

// leave removes a finished (or failed) slot.
func (c *combiner) leave(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active--
	c.flushIfReady(ctx)
}

// fail stops every slot with err.
func (c *combiner) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
	c.cond.Broadcast()
}

// flushIfReady runs the round's exchange once every active slot has
// handed in its frame. The caller holds mu.
func (c *combiner) flushIfReady(ctx context.Context) {
	if c.err != nil || len(c.out) == 0 || len(c.out) < c.active {
		return
	}
	slots := make([]int, 0, len(c.out))
	for s := range c.out {
		slots = append(slots, s)
	}
	sortInts(slots)
	var frame []byte
	payload := 0
	for _, s := range slots {
		frame = binary.LittleEndian.AppendUint32(frame, uint32(len(c.out[s])))
		frame = append(frame, c.out[s]...)
		payload += len(c.out[s])
	}
	clear(c.out)
	peer, err := c.conn.exchange(ctx, frame, payload)
	if err == nil {
		for _, s := range slots {
			if len(peer) < 4 {
				err = fmt.Errorf("%w: combined frame ends before slot %d", ErrFrame, s)
				break
			}
			n := binary.LittleEndian.Uint32(peer)
			if uint64(n) > uint64(len(peer)-4) {
				err = fmt.Errorf("%w: slot %d announces %d bytes, %d left", ErrFrame, s, n, len(peer)-4)
				break
			}
			c.in[s] = peer[4 : 4+n]
			peer = peer[4+n:]
		}
		if err == nil && len(peer) != 0 {
			err = fmt.Errorf("%w: %d trailing bytes after %d slots", ErrFrame, len(peer), len(slots))
		}
	}
	if err != nil {
		c.err = err
	}
	c.round++
	c.cond.Broadcast()
}

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// GenBatch generates len(alphaShares) keys of shape p at once, in
// lockstep over the session's connection: the batch takes as many
// exchanges as one key (ExchangesPerKey) and the sum of the keys' bytes.
// Each key runs on its own OT fork and tree buffers (slot i uses fork
// i+1). The peer must call GenBatch with the same shape and count. As
// with Gen, after a protocol error the session must be closed.
func (s *Session) GenBatch(ctx context.Context, p fss.Params, alphaShares, betaShares []uint64) ([]*fss.Key, Counters, error) {
	n := len(alphaShares)
	if n < 1 || n > MaxBatch {
		return nil, Counters{}, fmt.Errorf("twopc: a batch of %d keys is outside 1..%d", n, MaxBatch)
	}
	if len(betaShares) != n {
		return nil, Counters{}, fmt.Errorf("twopc: %d α shares but %d β shares", n, len(betaShares))
	}
	for i := range n {
		if err := checkInputs(p, alphaShares[i], betaShares[i]); err != nil {
			return nil, Counters{}, fmt.Errorf("key %d: %w", i, err)
		}
	}
	for len(s.slots) < n {
		id := uint64(len(s.slots) + 1)
		rcv, err := s.rcv.Fork(id)
		if err != nil {
			return nil, Counters{}, err
		}
		snd, err := s.snd.Fork(id)
		if err != nil {
			return nil, Counters{}, err
		}
		s.slots = append(s.slots, slot{rcv: rcv, snd: snd})
	}
	before := s.conn.Counters()
	comb := newCombiner(s.conn, n)
	runs := make([]*run, n)
	for i := range n {
		sl := &s.slots[i]
		r, err := s.newRun(ctx, p, func(ctx context.Context, out []byte) ([]byte, error) {
			return comb.exchange(ctx, i, out)
		}, sl.rcv, sl.snd, &sl.tree)
		if err != nil {
			return nil, Counters{}, err
		}
		runs[i] = r
	}
	keys := make([]*fss.Key, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys[i], errs[i] = r.gen(alphaShares[i], betaShares[i])
			if errs[i] != nil {
				comb.fail(errs[i])
			}
			comb.leave(ctx)
		}()
	}
	wg.Wait()
	cost := s.conn.Counters().Sub(before)
	for i, err := range errs {
		if err != nil {
			return nil, cost, fmt.Errorf("twopc: batch key %d: %w", i, err)
		}
	}
	return keys, cost, nil
}
