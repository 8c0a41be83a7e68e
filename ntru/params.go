package ntru

import (
	"fmt"
	"strings"
	"sync"
)

const (
	q     = 2048 // the modulus q of both parameter sets
	qBits = 11   // bits per packed coefficient
	qMask = q - 1
)

// ParamSet names an NTRUEncrypt parameter set.
type ParamSet int

// The supported parameter sets.
const (
	EES1087EP1 ParamSet = iota + 1 // N = 1087, 192-bit security
	EES1499EP1                     // N = 1499, 256-bit security
)

type params struct {
	name      string
	n         int     // ring degree N
	df        int     // number of +1 (and of −1) coefficients of F
	dg        int     // g has dg+1 coefficients +1 and dg coefficients −1
	dr        int     // number of +1 (and of −1) coefficients of r
	dm0       int     // minimum count of each of −1, 0, +1 in m′
	db        int     // bits of random b
	c         uint    // bits per IGF-2 candidate index
	minCallsR int     // minimum hash calls for IGF-2 (does not change output)
	minCallsM int     // minimum hash calls for MGF-TP-1 (does not change output)
	oid       [3]byte // object identifier used in sData and blobs
	maxMsg    int     // maximum message length in bytes
	pkLen     int     // bits of packed h included in sData

	work sync.Pool // *decWork buffers for decryption
}

var paramTable = map[ParamSet]*params{
	EES1087EP1: {
		name: "ees1087ep1", n: 1087, df: 63, dg: 362, dr: 63, dm0: 63,
		db: 192, c: 13, minCallsR: 13, minCallsM: 14,
		oid: [3]byte{0x00, 0x05, 0x05}, maxMsg: 178, pkLen: 192,
	},
	EES1499EP1: {
		name: "ees1499ep1", n: 1499, df: 79, dg: 499, dr: 79, dm0: 79,
		db: 256, c: 13, minCallsR: 17, minCallsM: 19,
		oid: [3]byte{0x00, 0x06, 0x05}, maxMsg: 247, pkLen: 256,
	},
}

func (s ParamSet) params() (*params, error) {
	p, ok := paramTable[s]
	if !ok {
		return nil, fmt.Errorf("ntru: unknown parameter set %d", int(s))
	}
	return p, nil
}

// Name returns the IEEE 1363.1 name of the set, e.g. "ees1087ep1", or ""
// for an unknown value.
func (s ParamSet) Name() string {
	if p, ok := paramTable[s]; ok {
		return p.name
	}
	return ""
}

// String implements fmt.Stringer.
func (s ParamSet) String() string {
	if n := s.Name(); n != "" {
		return n
	}
	return fmt.Sprintf("ParamSet(%d)", int(s))
}

// ParamSetByName looks a set up by its name (case-insensitive).
func ParamSetByName(name string) (ParamSet, error) {
	for s, p := range paramTable {
		if strings.EqualFold(p.name, name) {
			return s, nil
		}
	}
	return 0, fmt.Errorf("ntru: unknown parameter set %q (want ees1087ep1 or ees1499ep1)", name)
}

// ParamSets lists the supported sets.
func ParamSets() []ParamSet { return []ParamSet{EES1087EP1, EES1499EP1} }

// MaxMessageLen is the longest message Encrypt accepts, in bytes.
func (s ParamSet) MaxMessageLen() int { return s.get(func(p *params) int { return p.maxMsg }) }

// CiphertextSize is the length of every ciphertext, in bytes.
func (s ParamSet) CiphertextSize() int { return s.get((*params).ctLen) }

// PublicKeySize is the length of a marshalled public key, in bytes.
func (s ParamSet) PublicKeySize() int { return s.get(func(p *params) int { return 4 + p.ctLen() }) }

// PrivateKeySize is the length of a marshalled private key, in bytes.
func (s ParamSet) PrivateKeySize() int {
	return s.get(func(p *params) int { return 4 + p.ctLen() + p.fLen() })
}

func (s ParamSet) get(f func(*params) int) int {
	if p, ok := paramTable[s]; ok {
		return f(p)
	}
	return 0
}

// ctLen is the length of a packed ring element mod q (h or e).
func (p *params) ctLen() int { return (p.n*qBits + 7) / 8 }

// mbinLen is the length of Mbin = b ‖ len ‖ m ‖ zero padding.
func (p *params) mbinLen() int { return p.db/8 + 1 + p.maxMsg + 1 }

// listedLen is the length of F packed as an index list.
func (p *params) listedLen() int { return (2*p.df*indexBits(p.n) + 7) / 8 }

// tritsLen is the length of F packed five trits per byte.
func (p *params) tritsLen() int { return (p.n + 4) / 5 }

// fLen is the length of F in the private key blob: the reference picks the
// shorter of the two encodings.
func (p *params) fLen() int {
	if l, t := p.listedLen(), p.tritsLen(); l <= t {
		return l
	}
	return p.tritsLen()
}

// indexBits is the number of bits needed for an index below n.
func indexBits(n int) int {
	b := 0
	for (1 << b) < n {
		b++
	}
	return b
}
