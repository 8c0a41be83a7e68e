// Package kat is kord's known-answer self-test: the kord-v1 PRG lanes
// against an independent crypto/aes computation, and DPF/DCF generation,
// serialization and evaluation against the frozen vectors, embedded here so
// the binary can test itself (`kord selftest`). The vectors are package
// vectors' (internal/kat/vectors), the one copy in the repository.
package kat

import (
	"crypto/aes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/kat/vectors"
	"github.com/kord-fss/kord/internal/prg"
)

// Result counts passed and failed checks; Failures names the failed ones.
type Result struct {
	Passed   int      `json:"passed"`
	Failed   int      `json:"failed"`
	Failures []string `json:"failures,omitempty"`
}

func (r *Result) check(ok bool, format string, args ...any) {
	if ok {
		r.Passed++
		return
	}
	r.Failed++
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

// lane labels from the spec, held apart from internal/prg's own copy.
var laneLabels = [4]string{
	"kord/v1/prg/seed-left", "kord/v1/prg/seed-right",
	"kord/v1/prg/value-left", "kord/v1/prg/value-right",
}

// Run runs every known-answer check.
func Run() Result {
	var r Result
	runPRG(&r)
	vs, err := vectors.Load()
	if err != nil {
		r.check(false, "%v", err)
		return r
	}
	for i, v := range vs {
		runVector(&r, i, v)
	}
	return r
}

func runPRG(r *Result) {
	for l := prg.Lane(0); l < 4; l++ {
		h := sha256.Sum256([]byte(laneLabels[l]))
		key := prg.LaneKey(l)
		r.check(string(h[:16]) == string(key[:]), "prg: lane %d key is not SHA-256(%q)[:16]", l, laneLabels[l])
		c, err := aes.NewCipher(h[:16])
		if err != nil {
			r.check(false, "prg: %v", err)
			continue
		}
		in := make([]prg.Block, 8)
		for i := range in {
			s := sha256.Sum256([]byte(fmt.Sprintf("kord/kat/%d/%d", l, i)))
			copy(in[i][:], s[:16])
		}
		out := make([]prg.Block, len(in))
		prg.Hash(l, out, in)
		for i := range in {
			var want prg.Block
			c.Encrypt(want[:], in[i][:])
			for j := range want {
				want[j] ^= in[i][j]
			}
			r.check(out[i] == want, "prg: lane %d MMO of block %d disagrees with crypto/aes", l, i)
		}
	}
}

func block(h string) (b [16]byte, ok bool) {
	raw, err := hex.DecodeString(h)
	if err != nil || len(raw) != 16 {
		return b, false
	}
	copy(b[:], raw)
	return b, true
}

func runVector(r *Result, i int, v vectors.Vector) {
	typ, err := fss.ParseType(v.Type)
	r0, ok0 := block(v.Root0)
	r1, ok1 := block(v.Root1)
	if err != nil || !ok0 || !ok1 {
		r.check(false, "vector %d: malformed", i)
		return
	}
	p := fss.Params{Type: typ, InBits: v.InBits, OutBits: v.OutBits}
	k0, k1, err := fss.GenWithRoots(p, v.Alpha, v.Beta, r0, r1)
	if err != nil {
		r.check(false, "vector %d (%v): Gen: %v", i, p, err)
		return
	}
	for b, c := range []struct {
		k    *fss.Key
		want string
	}{{k0, v.Key0}, {k1, v.Key1}} {
		raw, err := c.k.MarshalBinary()
		r.check(err == nil && hex.EncodeToString(raw) == c.want, "vector %d (%v): key%d bytes differ", i, p, b)
		back, err := fss.ParseKey(raw)
		r.check(err == nil && back.Equal(c.k), "vector %d (%v): key%d does not parse back", i, p, b)
	}
	for _, e := range v.Evals {
		y0, err0 := k0.Eval(e.X)
		y1, err1 := k1.Eval(e.X)
		r.check(err0 == nil && err1 == nil && y0 == e.Y0 && y1 == e.Y1, "vector %d (%v): eval at %d", i, p, e.X)
	}
}
