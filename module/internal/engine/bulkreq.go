// The request a bulk slab was generated for, kept with the slab and
// checked before a re-collect hands the slab out again.

package engine

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"

	"github.com/kord-fss/kord/module/msg"
)

// slabReq is what the module committed for a bulk: the digest of its
// shape (bulkShape) and, in bound mode, this party's own shares (n and
// n·group), which leave with the record (wipe).
type slabReq struct {
	shape       [32]byte
	alpha, beta []uint64
}

func (r *slabReq) wipe() {
	clear(r.alpha)
	clear(r.beta)
	r.alpha, r.beta = nil, nil
}

// bulkShape digests what a bulk's slab depends on besides the own shares:
// mode, profile, key type and bits, N, payload group and the public
// payload (DeriveBeta, Beta, Betas). Each field has a fixed place and
// Betas its length first.
func bulkShape(b *msg.Bulk) [32]byte {
	h := sha256.New()
	var w [8]byte
	put := func(v uint64) {
		binary.LittleEndian.PutUint64(w[:], v)
		h.Write(w[:])
	}
	h.Write([]byte("kord bulk request v1"))
	put(uint64(b.Mode))
	put(uint64(b.Profile))
	put(uint64(b.Type))
	put(uint64(b.InBits))
	put(uint64(b.OutBits))
	put(uint64(b.N))
	put(uint64(b.G()))
	db := uint64(0)
	if b.DeriveBeta {
		db = 1
	}
	put(db)
	put(b.Beta)
	put(uint64(len(b.Betas)))
	for _, v := range b.Betas {
		put(v)
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// matches reports whether expect, with its shares those of keys at… of
// the bulk (bound), is the request r was committed for: the same shape
// and N, and the same own shares of those keys (at least one); a derived
// bulk has no own shares to name.
func (r *slabReq) matches(expect *msg.Bulk, at int) bool {
	x := bulkShape(expect)
	ok := subtle.ConstantTimeCompare(x[:], r.shape[:]) == 1
	k, g := len(expect.AlphaShares), expect.G()
	if r.alpha == nil {
		return ok && k == 0 && len(expect.BetaShares) == 0 && at == 0
	}
	if !ok || k == 0 || at < 0 || at > len(r.alpha)-k || len(expect.BetaShares) != k*g {
		return false
	}
	var diff uint64
	for i, v := range expect.AlphaShares {
		diff |= v ^ r.alpha[at+i]
	}
	for i, v := range expect.BetaShares {
		diff |= v ^ r.beta[at*g+i]
	}
	return diff == 0
}

// checkSlabReq refuses a slab collect whose expected request (expect,
// its shares those of keys at…; nil: no check) is not the one the slab at
// first was generated for (r). A refusal is counted (RejectRecollect).
// e.mu held.
func (e *Engine) checkSlabReq(first uint64, r *slabReq, expect *msg.Bulk, at int) error {
	if expect == nil {
		return nil
	}
	if r.matches(expect, at) {
		return nil
	}
	e.rejects[RejectRecollect]++
	e.log.Warn("slab re-collect refused: the bulk was generated for another request", "party", e.party, "counter", first)
	return bad("Expect: the bulk at counter %d was generated for another request; refused", first)
}
