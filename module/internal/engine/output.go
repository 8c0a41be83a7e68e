// Outputs: generated key shares waiting for their host to collect them, and
// the pooled key buffers behind them.

package engine

import (
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/internal/kdf"
	"github.com/kord-fss/kord/module/msg"
)

// output is one accepted key of this party. Its key is generated lazily:
// until a Collect needs it, the output holds its shape, counter and the
// reconstructed (α, β), and the first Collect that finds such an output
// generates every pending one, a batch per shape through the cross-key
// batch generator (the keys are the same bytes as one-at-a-time Gen).
type output struct {
	mode       msg.Mode
	profile    msg.Profile
	raw        []byte // this party's serialized key share; nil while pending
	alphaShare uint64
	betaShare  uint64

	params      fss.Params
	counter     uint64
	alpha, beta uint64
	tag         [kdf.TagSize]byte // the pair tag (kdf.PRF.PairTag)
	// req: this party's request the output was generated for (own
	// shares, shape, payload), for a Durable's re-collect check.
	req   msg.Share
	wiped bool      // dropped: no key is made for it
	chunk *keyChunk // the buffer raw is a slice of
}

// keyChunk is the buffer one generate call writes its keys into; each
// output holds a slice of it. When the last of them is wiped, the buffer
// (wiped with them) goes back to its pool for the next call.
type keyChunk struct {
	buf  []byte
	live int
	pool *chunkPool
}

// chunkPool keeps a few wiped key buffers; it is used under the engine's
// lock.
type chunkPool struct{ free [][]byte }

// maxFreeChunks bounds the buffers a pool keeps.
const maxFreeChunks = 8

func (p *chunkPool) get(n int) []byte {
	for i, b := range p.free {
		if cap(b) >= n {
			last := len(p.free) - 1
			p.free[i], p.free[last] = p.free[last], nil
			p.free = p.free[:last]
			return b[:n]
		}
	}
	return make([]byte, n)
}

// release notes that an output let go of its slice of c. Every byte of
// c.buf belongs to exactly one output's slice, which that output wiped:
// the buffer is not wiped a second time.
func (c *keyChunk) release() {
	if c.live--; c.live == 0 && len(c.pool.free) < maxFreeChunks {
		c.pool.free = append(c.pool.free, c.buf)
	}
}

// setTag computes the output's pair tag from its (α, β); call it before
// generate consumes them.
func (o *output) setTag(prf *kdf.PRF) {
	p := o.params
	prf.PairTag(o.counter, byte(o.mode), msg.TypeByte(o.profile, p.Type), byte(p.InBits), byte(p.OutBits), o.alpha, o.beta, &o.tag)
}

// wipe clears the output's secrets and lets go of its key buffer (an
// output lives on in its slab until the slab's last one is dropped).
func (o *output) wipe() {
	if o.wiped {
		return
	}
	clear(o.raw)
	o.raw, o.wiped = nil, true
	if o.chunk != nil {
		o.chunk.release()
		o.chunk = nil
	}
	o.alphaShare, o.betaShare, o.alpha, o.beta = 0, 0, 0, 0
	o.req = msg.Share{}
}

// outputSlab is how many outputs one slab holds.
const outputSlab = 256

// newOutput returns a zero output from the current slab (a slab stays
// alive until its last output is dropped).
func (e *Engine) newOutput() *output {
	if len(e.arena) == 0 {
		e.arena = make([]output, outputSlab)
	}
	o := &e.arena[0]
	e.arena = e.arena[1:]
	return o
}
