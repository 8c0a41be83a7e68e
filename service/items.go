package service

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/proto/modulepb"
)

// packItems returns items as parallel lists, or nil when one of them has a
// mode, type or width that does not fit in a byte (party 0 only packs
// requests it has validated, so nil means the batch goes out as items).
func packItems(items []*pb.BatchItem) *pb.PackedItems {
	pk := &pb.PackedItems{Ids: make([]uint64, len(items)), Shapes: make([]byte, 0, 4*len(items)), Counts: make([]uint32, len(items))}
	for i, it := range items {
		if it.Mode > 0xff || it.Type > 0xff || it.InBits > 0xff || it.OutBits > 0xff || it.Group > 1 || len(it.Betas) != 0 {
			return nil // a payload vector's item goes as it is
		}
		pk.Ids[i], pk.Counts[i] = it.Id, it.Count
		pk.Shapes = append(pk.Shapes, byte(it.Mode), byte(it.Type), byte(it.InBits), byte(it.OutBits))
		if it.DeriveBeta {
			if pk.DeriveBeta == nil {
				pk.DeriveBeta = make([]byte, len(items))
			}
			pk.DeriveBeta[i] = 1
		}
		if it.Beta != 0 {
			if pk.Betas == nil {
				pk.Betas = make([]uint64, len(items))
			}
			pk.Betas[i] = it.Beta
		}
		if (it.Mode == ItemCorrelation) != (it.Corr != nil) {
			return nil
		}
		if it.Corr != nil {
			pk.Corrs = append(pk.Corrs, it.Corr)
		}
	}
	return pk
}

// unpackItems returns the items of pk (one allocation for all), or an
// error naming the list that does not match the ids.
func unpackItems(pk *pb.PackedItems) ([]*pb.BatchItem, error) {
	n := len(pk.Ids)
	switch {
	case n == 0:
		return nil, fmt.Errorf("packed items: no ids")
	case len(pk.Shapes) != 4*n:
		return nil, fmt.Errorf("packed items: %d shape bytes for %d ids, want %d", len(pk.Shapes), n, 4*n)
	case len(pk.Counts) != n:
		return nil, fmt.Errorf("packed items: %d counts for %d ids", len(pk.Counts), n)
	case len(pk.DeriveBeta) != 0 && len(pk.DeriveBeta) != n:
		return nil, fmt.Errorf("packed items: %d derive_beta flags for %d ids", len(pk.DeriveBeta), n)
	case len(pk.Betas) != 0 && len(pk.Betas) != n:
		return nil, fmt.Errorf("packed items: %d betas for %d ids", len(pk.Betas), n)
	}
	vals := make([]pb.BatchItem, n)
	out := make([]*pb.BatchItem, n)
	corrs := pk.Corrs
	for i := range vals {
		it := &vals[i]
		s := pk.Shapes[4*i : 4*i+4]
		it.Id, it.Mode, it.Type, it.InBits, it.OutBits, it.Count = pk.Ids[i], uint32(s[0]), uint32(s[1]), uint32(s[2]), uint32(s[3]), pk.Counts[i]
		if len(pk.DeriveBeta) > 0 {
			switch pk.DeriveBeta[i] {
			case 0:
			case 1:
				it.DeriveBeta = true
			default:
				return nil, fmt.Errorf("packed items: derive_beta[%d] is %d, want 0 or 1", i, pk.DeriveBeta[i])
			}
		}
		if len(pk.Betas) > 0 {
			it.Beta = pk.Betas[i]
		}
		if it.Mode == ItemCorrelation {
			if len(corrs) == 0 || corrs[0] == nil {
				return nil, fmt.Errorf("packed items: item %d is a correlation and corrs has no shape left for it", i)
			}
			it.Corr, corrs = corrs[0], corrs[1:]
		}
		out[i] = it
	}
	if len(corrs) > 0 {
		return nil, fmt.Errorf("packed items: %d correlation shapes for no correlation item", len(corrs))
	}
	return out, nil
}

func newTranscript(c0, c1 []byte) []byte {
	h := sha256.New()
	h.Write([]byte("kord/v1/transcript"))
	h.Write(c0)
	h.Write(c1)
	return h.Sum(nil)
}

// chain extends the session transcript by one batch header:
//
//	SHA-256(prev ‖ seq ‖ tier ‖ first ‖ len(items) ‖ items)
//
// with the four header words 8 bytes LE. Unpacked, each item is five such
// words (id; mode<<48 | type<<40 | in_bits<<32 | out_bits<<24; count;
// derive_beta; beta — 40 bytes). Packed (a session whose party 1 reads
// PackedItems), the header is followed by the byte 'P' and each item is
// varint(id) ‖ mode ‖ type ‖ in_bits ‖ out_bits ‖ varint(count) ‖
// derive_beta ‖ varint(beta), about 10 bytes; packed items all fit these
// bytes. A correlation item (ItemCorrelation) is followed, in either form,
// by its shape: 'C', then kind, ring, in, out, k, h, w, part and
// weight_from as varints. Both parties chain the same items the same way
// whichever form carried them, so the transcript checks what party 1 will
// claim.
func chain(prev []byte, seq uint64, tier msg.Tier, first uint64, items []*pb.BatchItem, packed bool) []byte {
	per := 40
	if packed {
		per = 16
	}
	b := make([]byte, 0, len(prev)+33+per*len(items))
	b = append(b, prev...)
	b = binary.LittleEndian.AppendUint64(b, seq)
	b = binary.LittleEndian.AppendUint64(b, uint64(tier))
	b = binary.LittleEndian.AppendUint64(b, first)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(items)))
	flag := func(v bool) byte {
		if v {
			return 1
		}
		return 0
	}
	if packed {
		b = append(b, 'P')
		for _, it := range items {
			b = protowire.AppendVarint(b, it.Id)
			b = append(b, byte(it.Mode), byte(it.Type), byte(it.InBits), byte(it.OutBits))
			b = protowire.AppendVarint(b, uint64(it.Count))
			b = append(b, flag(it.DeriveBeta))
			b = protowire.AppendVarint(b, it.Beta)
			b = appendCorr(b, it.Corr)
			b = appendVec(b, it)
		}
	} else {
		for _, it := range items {
			b = binary.LittleEndian.AppendUint64(b, it.Id)
			b = binary.LittleEndian.AppendUint64(b, uint64(it.Mode)<<48|uint64(it.Type)<<40|uint64(it.InBits)<<32|uint64(it.OutBits)<<24)
			b = binary.LittleEndian.AppendUint64(b, uint64(it.Count))
			b = binary.LittleEndian.AppendUint64(b, uint64(flag(it.DeriveBeta)))
			b = binary.LittleEndian.AppendUint64(b, it.Beta)
			b = appendCorr(b, it.Corr)
			b = appendVec(b, it)
		}
	}
	sum := sha256.Sum256(b)
	return sum[:]
}

// appendVec appends a payload vector's group and public elements to a
// transcript header (nothing for a one-element item, whose header is what
// it always was).
func appendVec(b []byte, it *pb.BatchItem) []byte {
	if it.Group < 2 && len(it.Betas) == 0 {
		return b
	}
	b = append(b, 'G')
	b = protowire.AppendVarint(b, uint64(it.Group))
	b = protowire.AppendVarint(b, uint64(len(it.Betas)))
	for _, v := range it.Betas {
		b = protowire.AppendVarint(b, v)
	}
	return b
}

// appendCorr appends a correlation item's shape to a transcript header
// (nothing for other items).
func appendCorr(b []byte, c *modulepb.Correlation) []byte {
	if c == nil {
		return b
	}
	b = append(b, 'C')
	for _, v := range []uint64{uint64(c.Kind), uint64(c.Ring), uint64(c.In), uint64(c.Out), uint64(c.K), uint64(c.H), uint64(c.W), uint64(c.Part), c.WeightFrom} {
		b = protowire.AppendVarint(b, v)
	}
	if c.Relu != 0 || c.Ars != 0 || c.Shift != 0 || c.Maxpool != 0 {
		// LLAMA gate packs; a multiplication correlation's digest is
		// what it was before they existed.
		b = append(b, 'G')
		for _, v := range []uint32{c.Relu, c.Ars, c.Shift, c.Maxpool} {
			b = protowire.AppendVarint(b, uint64(v))
		}
	}
	return b
}
