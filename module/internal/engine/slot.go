// Slots: one submission's own shares, waiting for the peer's frame of the same
// counters.

package engine

import (
	"github.com/kord-fss/kord/module/internal/channel"
	"github.com/kord-fss/kord/module/msg"
)

type record struct {
	counter uint64
	share   msg.Share // own shares: secret until wiped
}

func (r *record) wipe() { r.share.AlphaShare, r.share.BetaShare, r.share.Beta = 0, 0, 0 }

// slot is one expected peer frame: one record, a batch under BatchMAC, or
// a bound bulk submission (bulk set, recs nil).
type slot struct {
	tier msg.Tier
	recs []*record
	bulk *bulkSlot
}

func (s *slot) first() uint64 {
	if s.bulk != nil {
		return s.bulk.first
	}
	return s.recs[0].counter
}

func (s *slot) last() uint64 {
	if s.bulk != nil {
		return s.bulk.first + uint64(s.bulk.n) - 1
	}
	return s.recs[len(s.recs)-1].counter
}

// size is the number of own shares the slot holds.
func (s *slot) size() int {
	if s.bulk != nil {
		return s.bulk.n
	}
	return len(s.recs)
}

// wipe clears the slot's own shares.
func (s *slot) wipe() {
	if s.bulk != nil {
		s.bulk.wipe()
	}
	for _, r := range s.recs {
		r.wipe()
	}
}

// descs returns the frame shapes of the slot's records, in one (a
// single-record slot's) when it has room.
func (s *slot) descs(one *[1]channel.Desc) []channel.Desc {
	ds := one[:]
	if len(s.recs) > 1 {
		ds = make([]channel.Desc, len(s.recs))
	}
	for i, r := range s.recs {
		ds[i] = desc(r.share)
	}
	return ds
}

func desc(s msg.Share) channel.Desc {
	return channel.Desc{Mode: byte(s.Mode), Type: msg.TypeByte(s.Profile, s.Type), InBits: s.InBits, OutBits: s.OutBits}
}
