// LLAMA gate key packs (ReLU, ARS, MaxPool) on the correlation path: masks
// drawn inside under the request's description, each module keeping only
// its own party's packs.

package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/kord-fss/kord/fss/llama"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/internal/kdf"
	"github.com/kord-fss/kord/module/msg"
)

// Derived LLAMA gate packs (a msg.SubmitCorrelation of kind
// msg.CorrLlamaGates). Both modules of a pair key one stream from the
// request's whole description (gateDesc) and draw, for the pack at
// position j (ReLU packs first, then ARS, then MaxPool), the words
// gateWords lays out: the masks, the DCF roots, party 0's share of each
// pack field and party 0's shares of the masks. Each builds the pack's
// DCFs and computes its fields — ARS's msb(−r_in) and α_n >> s included
// — from the masks it sees (llama.GenGatesParty), and keeps only its own
// party's pack bytes and mask shares. The counters (one per pack) are
// committed before anything is drawn; a refused request moves none.

// Word slots of one pack's draw (gateWords words in all).
const (
	gwRIn    = 0  // r_in[0], r_in[1]
	gwROut   = 2  // r_out
	gwSplit  = 3  // party 0's share of each share field, 6
	gwShares = 9  // party 0's share of r_in[0], r_in[1], r_out
	gwRoots  = 12 // DCF 0's roots (party 0, party 1), then DCF 1's: 2 words each
	gwWords  = 20
)

// gateDesc is the description a gates request's stream is keyed by:
// everything its packs are a function of besides the pair's root key.
func gateDesc(first uint64, c *msg.Correlation) []byte {
	d := make([]byte, 0, 48)
	d = append(d, "kord/v1/llama-gates"...)
	d = append(d, byte(c.Kind), byte(c.Ring), byte(c.Shift))
	for _, v := range []uint64{first, uint64(c.Relu), uint64(c.Ars), uint64(c.MaxPool)} {
		d = binary.LittleEndian.AppendUint64(d, v)
	}
	return d
}

// gateSecrets turns one pack's draw into its secrets and party 0's mask
// shares (r_in[0], r_in[1], r_out).
func gateSecrets(g llama.Gate, w []uint64) (s llama.GateSecrets, share0 [3]uint64) {
	m := prg.Mask(g.Bits)
	s.RIn[0], s.ROut = w[gwRIn]&m, w[gwROut]&m
	share0[0], share0[2] = w[gwShares]&m, w[gwShares+2]&m
	if g.Masks() == 2 {
		s.RIn[1], share0[1] = w[gwRIn+1]&m, w[gwShares+1]&m
	}
	for f := 0; f < g.ShareFields(); f++ {
		s.Split[f] = w[gwSplit+f] & m
	}
	for d := range g.DCFs() {
		for b := range 2 {
			at := gwRoots + 4*d + 2*b
			binary.LittleEndian.PutUint64(s.Roots[d][b][:8], w[at])
			binary.LittleEndian.PutUint64(s.Roots[d][b][8:], w[at+1])
		}
		// LLAMA's roots differ in the control bit (bit 0).
		s.Roots[d][1][0] = s.Roots[d][1][0]&^1 | (s.Roots[d][0][0]&1 ^ 1)
	}
	return s, share0
}

func (e *Engine) submitGates(req *msg.SubmitRequest) (*msg.SubmitResponse, error) {
	c := req.Corr
	_, nr, nz, err := c.Sizes()
	if err != nil {
		return nil, bad("%v", err)
	}
	if err := e.corrRoom(req, nr+nz+c.PackBytes()/8); err != nil {
		return nil, err
	}
	blocks := c.Packs()
	// Commit before anything is drawn.
	first := e.ctr.Next
	next := e.ctr
	next.Next += uint64(blocks)
	if err := e.store.Save(next); err != nil {
		return nil, fmt.Errorf("module: saving counters: %w", err)
	}
	e.ctr = next

	sh, err := e.makeGates(first, c)
	if err != nil {
		// The counters stay spent: nothing made under them is handed out.
		return nil, fmt.Errorf("module: LLAMA gates: %w", err)
	}
	sh.Counter, sh.Blocks, sh.Corr = first, blocks, *c
	var tag [msg.PairTagSize]byte
	e.prf.PairTag(first, corrTagMode, byte(c.Kind), byte(c.Ring), byte(c.Shift),
		uint64(c.Relu)|uint64(c.Ars)<<32, uint64(c.MaxPool)|uint64(blocks)<<32, (*[16]byte)(tag[:]))
	sh.PairTag = tag
	if e.corrs == nil {
		e.corrs = map[uint64]*msg.CorrShares{}
	}
	e.corrs[first] = sh
	return &msg.SubmitResponse{FirstCounter: first, Count: 1}, nil
}

// makeGates draws and builds this party's packs and mask shares of the
// gates request c at counter first.
func (e *Engine) makeGates(first uint64, c *msg.Correlation) (*msg.CorrShares, error) {
	stream, err := e.prf.GateStream(gateDesc(first, c))
	if err != nil {
		return nil, err
	}
	_, nr, nz, _ := c.Sizes()
	sh := &msg.CorrShares{R: make([]uint64, 0, nr), Z: make([]uint64, 0, nz), Packs: make([]byte, c.PackBytes())}
	m := prg.Mask(c.Ring)
	w := make([]uint64, gwWords)
	defer clear(w)
	mine := func(v, v0 uint64) uint64 {
		if e.party == 0 {
			return v0
		}
		return (v - v0) & m
	}
	gates, counts := c.GateRuns()
	pos, off := uint64(0), 0
	for i, g := range gates {
		sec := make([]llama.GateSecrets, counts[i])
		for k := range sec {
			kdf.GateWords(stream, pos, w)
			var s0 [3]uint64
			sec[k], s0 = gateSecrets(g, w)
			for j := 0; j < g.Masks(); j++ {
				sh.R = append(sh.R, mine(sec[k].RIn[j], s0[j]))
			}
			sh.Z = append(sh.Z, mine(sec[k].ROut, s0[2]))
			pos++
		}
		n := counts[i] * g.PackSize()
		err := genGatesParty(e.party, e.workers, g, sec, sh.Packs[off:off+n])
		for k := range sec {
			sec[k].Wipe()
		}
		if err != nil {
			sh.Wipe()
			return nil, err
		}
		off += n
	}
	return sh, nil
}

// genGatesParty is llama.GenGatesParty on up to workers goroutines
// (contiguous runs of packs, each a multiple of llama.BatchKeys).
func genGatesParty(party, workers int, g llama.Gate, sec []llama.GateSecrets, out []byte) error {
	n, size := len(sec), g.PackSize()
	per := (n + workers - 1) / max(workers, 1)
	per = (per + llama.BatchKeys - 1) / llama.BatchKeys * llama.BatchKeys
	if workers <= 1 || n <= llama.BatchKeys || per >= n {
		return llama.GenGatesParty(g, party, sec, out)
	}
	var wg sync.WaitGroup
	errs := make([]error, (n+per-1)/per)
	for w, lo := 0, 0; lo < n; w, lo = w+1, lo+per {
		hi := min(n, lo+per)
		wg.Go(func() { errs[w] = llama.GenGatesParty(g, party, sec[lo:hi], out[lo*size:hi*size]) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
