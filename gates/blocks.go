package gates

import (
	"fmt"

	"github.com/kord-fss/kord/fss"
)

// opMat is one party's material for one operation: key shares, mask shares
// (one per opened value) and extra additive shares a gate may need.
type opMat struct {
	keys []*fss.Key
	r    []uint64
	w    []uint64
	used bool // taken by an Eval: its masks must never be opened again
}

// batch is a Material: one opMat per operation.
type batch []opMat

func (b batch) Ops() int { return len(b) }

func newBatches(ops int) [2]batch { return [2]batch{make(batch, ops), make(batch, ops)} }

// asBatch takes the material of one Eval: it checks its shape and marks it
// used, so a second Eval on the same material fails instead of opening a
// second value under the same masks.
func asBatch(m Material, ops, keys, masks int) (batch, error) {
	b, ok := m.(batch)
	if !ok || len(b) != ops {
		return nil, fmt.Errorf("%w: want %d operations", ErrMaterial, ops)
	}
	for i := range b {
		if len(b[i].keys) != keys || len(b[i].r) != masks {
			return nil, fmt.Errorf("%w: operation %d has %d keys and %d masks, want %d and %d", ErrMaterial, i, len(b[i].keys), len(b[i].r), keys, masks)
		}
		if b[i].used {
			return nil, fmt.Errorf("%w: operation %d's material was already used; a reused mask reveals the difference of two inputs", ErrMaterial, i)
		}
	}
	for i := range b {
		b[i].used = true
	}
	return b, nil
}

// derive appends one derived key (β = 1) to every operation of both
// parties and records the α shares as that operation's next mask.
func derive(src KeySource, p fss.Params, m [2]batch) error {
	k, a, _, err := derivedN(src, p, len(m[0]), false)
	if err != nil {
		return err
	}
	for b := 0; b < 2; b++ {
		for i := range m[b] {
			m[b][i].keys = append(m[b][i].keys, k[b][i])
			m[b][i].r = append(m[b][i].r, a[b][i])
		}
	}
	return nil
}

// bindAll requests, for every operation i, one bound key pair with α shares
// alpha(i) and β shares beta(i), and appends it to the operation's keys.
func bindAll(src KeySource, p fss.Params, m [2]batch, shares func(i int) (alpha, beta [2]uint64)) error {
	var al, bt [2][]uint64
	for i := range m[0] {
		a, c := shares(i)
		for b := 0; b < 2; b++ {
			al[b] = append(al[b], a[b])
			bt[b] = append(bt[b], c[b])
		}
	}
	k, err := boundN(src, p, al, bt)
	if err != nil {
		return err
	}
	for b := 0; b < 2; b++ {
		for i := range m[b] {
			m[b][i].keys = append(m[b][i].keys, k[b][i])
		}
	}
	return nil
}

func evalPre(g Gate, p *Party, m Material, in [][]uint64) error {
	if err := checkParty(p); err != nil {
		return err
	}
	return checkBatch(g, m, in)
}

// maxFullDomain bounds ℓ for blocks that evaluate a key on the whole domain.
const maxFullDomain = 24
