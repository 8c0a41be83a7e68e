package service

import (
	"reflect"
	"testing"

	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// TestPackViewMatchesRecords: a job whose outputs are a view of its slab
// packs exactly the lists a job of the same outputs as records packs,
// alone and after jobs of either kind, with shares, without, and with
// leading keys whose shares are zero (the share lists start late).
func TestPackViewMatchesRecords(t *testing.T) {
	const stride = 5
	type spec struct {
		n      int
		shares bool
		zeros  int // leading keys with zero shares
		evals  bool
	}
	mk := func(id uint64, first uint64, sp spec, view bool) *job {
		keys := make([]byte, sp.n*stride)
		tags := make([]byte, sp.n*msg.PairTagSize)
		for i := range keys {
			keys[i] = byte(int(id)*31 + i)
		}
		for i := range tags {
			tags[i] = byte(int(id)*7 + i)
		}
		var alpha, beta []uint64
		if sp.shares {
			alpha, beta = make([]uint64, sp.n), make([]uint64, sp.n)
			for k := sp.zeros; k < sp.n; k++ {
				alpha[k], beta[k] = uint64(k+1)*3+id, uint64(k+1)*5+id
			}
		}
		j := &job{id: id, keyBuf: keys}
		if view {
			j.vn, j.vFirst, j.vMode, j.vStride, j.vTags, j.vAlpha, j.vBeta = sp.n, first, msg.Derived, stride, tags, alpha, beta
			return j
		}
		j.outs = make([]msg.CollectResponse, sp.n)
		for k := range j.outs {
			o := &j.outs[k]
			o.Counter, o.Mode, o.Key, o.PairTag = first+uint64(k), msg.Derived, keys[k*stride:(k+1)*stride], [msg.PairTagSize]byte(tags[k*msg.PairTagSize:])
			if sp.shares {
				o.AlphaShare, o.BetaShare = alpha[k], beta[k]
			}
			if sp.evals {
				o.Evals = []uint64{9}
			}
		}
		return j
	}
	cases := [][]spec{
		{{n: 4, shares: true}},
		{{n: 4}},
		{{n: 4, shares: true, zeros: 2}},
		{{n: 4, shares: true, zeros: 4}, {n: 3, shares: true, zeros: 1}},
		{{n: 2}, {n: 3, shares: true}},
		{{n: 2, shares: true}, {n: 3}},
		{{n: 2, evals: true}, {n: 3, shares: true}},
	}
	for ci, c := range cases {
		for mask := 0; mask < 1<<len(c); mask++ {
			var want, got pb.PackedReplies
			first := uint64(100)
			for i, sp := range c {
				r := mk(uint64(i+1), first, sp, false)
				r.packLists(&want, true)
				v := mk(uint64(i+1), first, sp, mask&(1<<i) != 0 && !sp.evals)
				v.packLists(&got, true)
				if v.nOut() != sp.n {
					t.Fatalf("case %d: nOut %d, want %d", ci, v.nOut(), sp.n)
				}
				for k := 0; k < sp.n; k++ {
					if v.vn > 0 && !reflect.DeepEqual(v.viewOut(k), r.outs[k]) {
						t.Fatalf("case %d: viewOut(%d) %+v, record %+v", ci, k, v.viewOut(k), r.outs[k])
					}
				}
				first += uint64(sp.n)
			}
			if !reflect.DeepEqual(&got, &want) {
				t.Fatalf("case %d, views %b: packed\n%+v\nwant\n%+v", ci, mask, &got, &want)
			}
		}
	}
}
