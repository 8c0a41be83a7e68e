package compare

import (
	"fmt"
	"math"

	"github.com/kord-fss/kord/baseline/twopc"
	"github.com/kord-fss/kord/fss"
)

// Fit is the baseline's seconds per key on one link as a function of ℓ:
// seconds = A·E(ℓ) + C·2^ℓ, with E(ℓ) the protocol's exchanges per key
// (twopc.ExchangesPerKey: the link's latency per exchange) and 2^ℓ the
// leaves of the full tree each party expands (its local work). A and C
// are fitted by non-negative least squares over the measured widths.
type Fit struct {
	Block   string       `json:"block"`
	Link    string       `json:"link"`
	A       float64      `json:"seconds_per_exchange"`
	C       float64      `json:"seconds_per_leaf"`
	Points  [][2]float64 `json:"points"` // (ℓ, fastest seconds per key at ℓ)
	Formula string       `json:"formula"`
	typ     fss.Type
}

func exchanges(typ fss.Type, l float64) float64 {
	return float64(twopc.ExchangesPerKey(fss.Params{Type: typ, InBits: int(l), OutBits: int(l)}))
}

// fitSeconds fits the points (ℓ, seconds); it needs two distinct widths.
func fitSeconds(typ fss.Type, link string, pts [][2]float64) (Fit, error) {
	f := Fit{Block: blockName(typ), Link: link, Points: pts, typ: typ}
	distinct := map[float64]bool{}
	for _, p := range pts {
		distinct[p[0]] = true
	}
	if len(distinct) < 2 {
		return f, fmt.Errorf("compare: fitting %s on %s needs 2 measured widths, have %d (lower --bits or raise --max-measured)", f.Block, link, len(distinct))
	}
	var see, sel, sll, set, slt float64
	for _, p := range pts {
		e, x := exchanges(typ, p[0]), math.Exp2(p[0])
		see += e * e
		sel += e * x
		sll += x * x
		set += e * p[1]
		slt += x * p[1]
	}
	det := see*sll - sel*sel
	f.A, f.C = (set*sll-slt*sel)/det, (see*slt-sel*set)/det
	switch {
	case det == 0 || f.A < 0 && f.C < 0:
		f.A, f.C = set/see, 0
	case f.C < 0:
		f.A, f.C = set/see, 0
	case f.A < 0:
		f.A, f.C = 0, slt/sll
	}
	f.Formula = fmt.Sprintf("%s on %s: seconds/key = %.4g·E(ℓ) + %.4g·2^ℓ, E(ℓ) = exchanges per key (%d at ℓ=32)",
		f.Block, link, f.A, f.C, twopc.ExchangesPerKey(fss.Params{Type: typ, InBits: 32, OutBits: 32}))
	return f, nil
}

// at evaluates the fit at ℓ.
func (f Fit) at(l int) float64 {
	return f.A*exchanges(f.typ, float64(l)) + f.C*math.Exp2(float64(l))
}

// fitFixedLeaf fits only A, with the local work per leaf C given (from
// an unshaped run): A = Σ E·(t − C·2^ℓ) / Σ E², at least 0.
func fitFixedLeaf(typ fss.Type, link string, pts [][2]float64, c float64) Fit {
	f := Fit{Block: blockName(typ), Link: link, Points: pts, typ: typ, C: c}
	var see, set float64
	for _, p := range pts {
		e := exchanges(typ, p[0])
		see += e * e
		set += e * (p[1] - c*math.Exp2(p[0]))
	}
	if see > 0 {
		f.A = max(0, set/see)
	}
	f.Formula = fmt.Sprintf("%s on %s: seconds/key = %.4g·E(ℓ) + %.4g·2^ℓ, the 2^ℓ term from the loopback fit of this run, E(ℓ) = exchanges per key (%d at ℓ=32)",
		f.Block, link, f.A, f.C, twopc.ExchangesPerKey(fss.Params{Type: typ, InBits: 32, OutBits: 32}))
	return f
}
