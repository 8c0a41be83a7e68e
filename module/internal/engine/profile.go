// Key profiles: which dealer Gen (kord-v1 or EzPC LLAMA) a share asks for.

package engine

import (
	"errors"
	"fmt"
	"sync"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/fss/llama"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
)

// Key profiles (msg.Profile). The protocol is the same for every profile:
// the profile is part of the key's shape, and msg.TypeByte folds it into
// the type byte of every frame's associated data, every pair tag and every
// root derivation (kord-v1's byte is unchanged). Only Gen, the key layout
// and Eval differ, and they are chosen here.

// genParty writes this party's keys of one shape (n = len(alpha) keys at
// msg.KeySize(pr, p) bytes each) into out, from the roots r0, r1 the
// module derived.
//
// g is the payload's group size (1, or a llama vector's G): beta holds
// len(alpha)·g elements, key i's at beta[i·g:].
func (e *Engine) genParty(pr msg.Profile, p fss.Params, g int, alpha, beta []uint64, r0, r1 []prg.Block, out []byte) error {
	if pr == msg.Llama {
		return genLlamaParty(e.party, e.workers, p, g, alpha, beta, r0, r1, out)
	}
	bg, err := e.gen(p)
	if err != nil {
		return err
	}
	return bg.GenPartyWithRoots(e.party, alpha, beta, r0, r1, out)
}

// genLlamaParty is genParty for the llama profile, on up to workers
// goroutines (contiguous runs of keys, each a multiple of
// llama.BatchKeys). LLAMA's roots carry the control bit in bit 0 and the
// two must differ there: root 1's bit 0 is set to the complement of root
// 0's (the rest of both roots is the PRF's output, and bit 0 of root 0
// stays pseudorandom, so a key's control bit tells its holder nothing).
// The modules' roots are rewritten in place; the caller wipes them.
func genLlamaParty(party, workers int, p fss.Params, g int, alpha, beta []uint64, r0, r1 []prg.Block, out []byte) error {
	for i := range r1 {
		r1[i][0] = r1[i][0]&^1 | ^r0[i][0]&1
	}
	lp := msg.LlamaParamsG(p, g)
	n, ks := len(alpha), lp.KeySize()
	per := (n + workers - 1) / max(workers, 1)
	per = (per + llama.BatchKeys - 1) / llama.BatchKeys * llama.BatchKeys
	if workers <= 1 || n <= llama.BatchKeys || per >= n {
		return llama.GenBatchParty(lp, party, alpha, beta, asLlamaBlocks(r0), asLlamaBlocks(r1), out)
	}
	var wg sync.WaitGroup
	errs := make([]error, (n+per-1)/per)
	for w, lo := 0, 0; lo < n; w, lo = w+1, lo+per {
		hi := min(n, lo+per)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = llama.GenBatchParty(lp, party, alpha[lo:hi], beta[lo*lp.Group:hi*lp.Group], asLlamaBlocks(r0[lo:hi]), asLlamaBlocks(r1[lo:hi]), out[lo*ks:hi*ks])
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// asLlamaBlocks views prg blocks as llama blocks (both are [16]byte).
func asLlamaBlocks(b []prg.Block) []llama.Block { return b }

// evalKey returns this party's evaluation shares of output o's key at
// points (consume mode).
func (e *Engine) evalKey(o *output, points []uint64) ([]uint64, error) {
	evals := make([]uint64, len(points))
	if o.profile == msg.Llama {
		k, err := llama.Parse(msg.LlamaParams(o.params), o.raw)
		if err != nil {
			return nil, fmt.Errorf("llama key: %w", err)
		}
		defer wipeLlama(k)
		var y [1]uint64
		for i, x := range points {
			if err := k.EvalInto(e.party, x, y[:]); err != nil {
				return nil, fmt.Errorf("llama Eval: %w", err)
			}
			evals[i] = y[0]
		}
		return evals, nil
	}
	key, err := fss.ParseKey(o.raw)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	defer key.Wipe()
	for i, x := range points {
		y, err := key.Eval(x)
		if err != nil {
			return nil, fmt.Errorf("Eval: %w", err)
		}
		evals[i] = y
	}
	return evals, nil
}

// wipeLlama clears a parsed llama key's secrets.
func wipeLlama(k *llama.Key) {
	k.Root = llama.Block{}
	clear(k.CW)
	clear(k.G)
	clear(k.V)
}
