// Generation: accepted outputs run through the dealer's Gen on the module's
// workers, in chunks.

package engine

import (
	"fmt"
	"slices"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
)

// materialize generates the keys of every pending output: by shape, in
// the order they were accepted, through a one-worker batch generator (each
// key's roots derived from kr, its counter, shape, α and β), keeping
// this party's share. On failure the pending outputs are wiped and
// dropped.
func (e *Engine) materialize() error {
	q := e.queue
	defer func() {
		clear(q)
		e.queue = q[:0]
	}()
	if e.pending == 0 {
		return nil
	}
	e.pending = 0
	// A batch is nearly always of one shape: a short list, not a map.
	type group struct {
		pr msg.Profile
		p  fss.Params
		os []*output
	}
	var groups []group
	for _, o := range q {
		if o.wiped || o.raw != nil { // dropped since, or already made
			continue
		}
		i := slices.IndexFunc(groups, func(g group) bool { return g.pr == o.profile && g.p == o.params })
		if i < 0 {
			groups = append(groups, group{pr: o.profile, p: o.params})
			i = len(groups) - 1
		}
		groups[i].os = append(groups[i].os, o)
	}
	for _, g := range groups {
		var err error
		for lo := 0; lo < len(g.os) && err == nil; lo += genChunk {
			err = e.generate(g.pr, g.p, g.os[lo:min(len(g.os), lo+genChunk)])
		}
		if err != nil {
			for _, g := range groups {
				for _, o := range g.os {
					if o.raw == nil {
						o.wipe()
						delete(e.ready, o.counter)
					}
				}
			}
			return err
		}
	}
	return nil
}

// maxGens bounds the batch generators a module keeps (each holds one
// group's scratch, up to about 100 KiB).
const maxGens = 16

// genChunk bounds the keys of one batch generator call, and so the scratch
// it needs: at most genChunk key pairs of the largest shape (about 3.4 MB).
const genChunk = 1024

// generate makes the keys of pending outputs of one shape.
func (e *Engine) generate(pr msg.Profile, p fss.Params, os []*output) error {
	k, ks := len(os), msg.KeySize(pr, p)
	alpha, beta := make([]uint64, k), make([]uint64, k)
	r0, r1 := make([]prg.Block, k), make([]prg.Block, k)
	defer func() {
		clear(alpha)
		clear(beta)
		clear(r0)
		clear(r1)
	}()
	for i, o := range os {
		alpha[i], beta[i] = o.alpha, o.beta
		o.alpha, o.beta = 0, 0
		r0[i], r1[i] = e.prf.Roots(o.counter, byte(o.mode), msg.TypeByte(pr, p.Type), byte(p.InBits), byte(p.OutBits), alpha[i], beta[i])
	}
	// Only this party's keys are written; each output keeps its slice of
	// the chunk's buffer and wipes it when collected.
	buf := e.keys.get(k * ks)
	if err := e.genParty(pr, p, 1, alpha, beta, r0, r1, buf); err != nil {
		clear(buf)
		// fss names the offending α or β in its errors: never pass them on.
		return fmt.Errorf("module: batch Gen at counter %d failed (parameters withheld)", os[0].counter)
	}
	c := &keyChunk{buf: buf, live: k, pool: &e.keys}
	for i, o := range os {
		o.raw, o.chunk = buf[i*ks:(i+1)*ks:(i+1)*ks], c
	}
	return nil
}
