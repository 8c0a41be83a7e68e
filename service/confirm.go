package service

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"hash"

	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Party 1 delivers a held batch only on a confirmation it can check
// against its own module (issue 32): a Confirm{ok} carries
//
//	mac = SHA-256("kord/v1/confirm" ‖ first counter (8, LE) ‖ party 0's pair tags, in counter order)
//
// and party 1 computes the same hash over its own module's tags of the
// batch's outputs. The tags are a PRF of the pair's key (k_tag, or k_corr
// for a correlation, inside the modules) over each output's counter and
// whole description; equal tags mean the two modules made the two shares
// of the same outputs. A host 0 whose module made other outputs at those
// counters has only other tags, and party 1 sends it only its digest
// (SHA-256 over "kord/v1/pair-tags" ‖ tags, another hash), so it cannot
// compute the confirmation; a confirmation that does not match fails the
// batch tampered and nothing of it is delivered. The same check guards a
// held batch settled at the next handshake (Hello.confirms).

// labelConfirm prefixes the confirmation hash.
const labelConfirm = "kord/v1/confirm"

// maxConfirms bounds the confirmations party 0 keeps for the next hello:
// party 1 holds at most InFlight batches of a session.
const maxConfirms = 64

// tagHashes feeds each pair tag written to it into both the batch digest
// (Sum) and the confirmation hash (c).
type tagHashes struct {
	hash.Hash
	c hash.Hash
}

func newTagHashes(first uint64) *tagHashes {
	h := &tagHashes{Hash: sha256.New(), c: sha256.New()}
	h.Hash.Write([]byte("kord/v1/pair-tags"))
	h.c.Write([]byte(labelConfirm))
	h.c.Write(binary.LittleEndian.AppendUint64(nil, first))
	return h
}

func (h *tagHashes) Write(b []byte) (int, error) {
	h.c.Write(b)
	return h.Hash.Write(b)
}

// confirmation is the confirmation hash over the tags written so far.
func (h *tagHashes) confirmation() []byte { return h.c.Sum(nil) }

// confirmed reports whether mac is the confirmation of held batch h.
func (h *heldBatch) confirmed(mac []byte) bool { return sameConfirm(h.confirm, mac) }

// keepConfirm (party 0) keeps the confirmation of a delivered batch for
// the next hello, dropping the oldest past maxConfirms.
func (p *Party) keepConfirm(seq uint64, mac []byte) {
	p.heldMu.Lock()
	defer p.heldMu.Unlock()
	p.confirms = append(p.confirms, &pb.Confirm{Seq: seq, Ok: true, Mac: mac})
	if len(p.confirms) > maxConfirms {
		p.confirms = append(p.confirms[:0], p.confirms[len(p.confirms)-maxConfirms:]...)
	}
}

// keptConfirms (party 0) returns the kept confirmations.
func (p *Party) keptConfirms() []*pb.Confirm {
	p.heldMu.Lock()
	defer p.heldMu.Unlock()
	return append([]*pb.Confirm(nil), p.confirms...)
}

// confirmIndex maps the confirmations of a hello by batch.
func confirmIndex(cs []*pb.Confirm) map[uint64][]byte {
	m := make(map[uint64][]byte, len(cs))
	for _, c := range cs {
		if c.GetOk() {
			m[c.Seq] = c.Mac
		}
	}
	return m
}

// labelItemConfirm prefixes a held request's confirmation after party 0
// restarted (Witness.held_ok_confirms).
const labelItemConfirm = "kord/v1/confirm/item"

// itemConfirm is SHA-256(labelItemConfirm ‖ first ‖ the n tags).
func itemConfirm(first uint64, tag func(k int) [16]byte, n int) []byte {
	h := sha256.New()
	h.Write([]byte(labelItemConfirm))
	h.Write(binary.LittleEndian.AppendUint64(nil, first))
	for k := range n {
		t := tag(k)
		h.Write(t[:])
	}
	return h.Sum(nil)
}

// heldConfirm is itemConfirm over party 1's own outputs of held job i of
// h (nil when it has none).
func heldConfirm(h *heldBatch, i int) []byte {
	j := h.jobs[i]
	if j.vn > 0 {
		return itemConfirm(j.vFirst, func(k int) [16]byte { return j.tagAt(k) }, j.vn)
	}
	rs := h.replies[i]
	if len(rs) == 0 {
		return nil
	}
	return itemConfirm(rs[0].Counter, func(k int) [16]byte { return rs[k].PairTag }, len(rs))
}

// sameConfirm compares two confirmations in constant time; an empty one
// never matches.
func sameConfirm(a, b []byte) bool {
	return len(a) == sha256.Size && subtle.ConstantTimeCompare(a, b) == 1
}
