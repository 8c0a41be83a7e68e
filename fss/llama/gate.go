package llama

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
)

// LLAMA's gate key packs (shared/spec/llama/gates.md): the bytes LLAMA's
// online code reads for one ReLU, one arithmetic shift (ARS, ScaleDown)
// or one pair-MaxPool, each a DCF or two plus additive shares of a few
// values, every value in Z_{2^Bits} written in ElemBytes(Bits) bytes. A
// pack holds no header; the reader knows the gate, Bits and Shift.
//
//	ReLU     DCF(Bits, Bits, 2; α = r_in−1, β = (1, −r_in)), e0, e1, β0, β1, r
//	ARS      DCF(S, Bits, 1; α = (−r_in) mod 2^S, 1),
//	         DCF(Bits−1, Bits, 2; α = (−r_in) mod 2^(Bits−1), (1, 1−2·msb)), sb0, sb1, rb
//	MaxPool  the ReLU pack for r_in = r1 − r2, r_out = 0, then rb
//
// The shares of a pack (e0 … rb) are its "share fields": party 0 holds a
// share drawn by the dealer, party 1 the value minus it.

// GateKind is one of LLAMA's three gates.
type GateKind uint8

const (
	GateReLU    GateKind = 1
	GateARS     GateKind = 2
	GateMaxPool GateKind = 3
)

func (k GateKind) String() string {
	switch k {
	case GateReLU:
		return "relu"
	case GateARS:
		return "ars"
	case GateMaxPool:
		return "maxpool"
	}
	return fmt.Sprintf("gate(%d)", uint8(k))
}

// Gate is the out-of-band shape of one pack.
type Gate struct {
	Kind  GateKind
	Bits  int // bw: input = output width, 8..64
	Shift int // ARS only: s, 1 ≤ s < Bits; zero for the others
}

// MinGateBits and MaxGateBits bound a gate's width.
const (
	MinGateBits = 8
	MaxGateBits = 64
)

// ErrGate marks a gate shape or pack LLAMA's code cannot use; the message
// names the field.
var ErrGate = errors.New("llama: gate")

func gateErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrGate, fmt.Sprintf(format, args...))
}

// Validate reports what is wrong with g, naming the field (bits, shift,
// kind).
func (g Gate) Validate() error {
	if g.Bits < MinGateBits || g.Bits > MaxGateBits {
		return gateErr("bits: %d is outside %d..%d", g.Bits, MinGateBits, MaxGateBits)
	}
	switch g.Kind {
	case GateReLU, GateMaxPool:
		if g.Shift != 0 {
			return gateErr("shift: %d given for a %v gate, which has none", g.Shift, g.Kind)
		}
	case GateARS:
		if g.Shift < 1 || g.Shift >= g.Bits {
			return gateErr("shift: %d is outside 1..%d (1 ≤ shift < bits)", g.Shift, g.Bits-1)
		}
	default:
		return gateErr("kind: unknown gate kind %d", uint8(g.Kind))
	}
	return nil
}

func (g Gate) String() string {
	if g.Kind == GateARS {
		return fmt.Sprintf("llama ars bits=%d shift=%d", g.Bits, g.Shift)
	}
	return fmt.Sprintf("llama %v bits=%d", g.Kind, g.Bits)
}

// DCFs returns the shapes of the pack's DCF keys, in file order (one for
// ReLU and MaxPool, two for ARS: the shift DCF and the dual DCF).
func (g Gate) DCFs() []Params {
	switch g.Kind {
	case GateARS:
		return []Params{
			{InBits: g.Shift, OutBits: g.Bits, Group: 1},
			{InBits: g.Bits - 1, OutBits: g.Bits, Group: 2},
		}
	default:
		return []Params{{InBits: g.Bits, OutBits: g.Bits, Group: 2}}
	}
}

// ShareFields is how many share fields follow the DCF keys: e0, e1, β0,
// β1, r for ReLU; sb0, sb1, rb for ARS (sb0, sb1 sit right after the dual
// DCF, which is the pack's last DCF); ReLU's five and rb for MaxPool.
func (g Gate) ShareFields() int {
	switch g.Kind {
	case GateReLU:
		return 5
	case GateARS:
		return 3
	default:
		return 6
	}
}

// Masks is how many input masks the gate has: two for MaxPool (r1, r2),
// else one.
func (g Gate) Masks() int {
	if g.Kind == GateMaxPool {
		return 2
	}
	return 1
}

// PackSize is the bytes of one party's pack (g valid).
func (g Gate) PackSize() int {
	n := 0
	for _, p := range g.DCFs() {
		n += p.KeySize()
	}
	return n + g.ShareFields()*ElemBytes(g.Bits)
}

// GateSecrets is everything random in one pack: the masks and the
// dealer's coins. Given the same secrets, GenGates writes the same bytes
// as LLAMA's dealer would with the same draws.
type GateSecrets struct {
	// RIn is the input mask (MaxPool: RIn[0] = r1, RIn[1] = r2, where r1
	// masks the first input); ROut the output mask; all below 2^Bits.
	RIn  [2]uint64
	ROut uint64
	// Roots[d] are DCF d's two root blocks (party 0, party 1); their bit 0
	// must differ. ARS uses Roots[0] (shift DCF) and Roots[1] (dual DCF).
	Roots [2][2]Block
	// Split[i] is party 0's share of share field i, in file order (below
	// 2^Bits); party 1 writes the field's value minus it.
	Split [6]uint64
}

// Wipe zeroes s.
func (s *GateSecrets) Wipe() { *s = GateSecrets{} }

// RandomGateSecrets draws one pack's masks, roots and share draws from
// crypto/rand: kord's in-process dealer (the module pair derives them
// instead).
func RandomGateSecrets(g Gate) (GateSecrets, error) {
	var s GateSecrets
	if err := g.Validate(); err != nil {
		return s, err
	}
	var buf [160]byte // 9 words, then up to two DCFs' root pairs at 80
	if _, err := rand.Read(buf[:]); err != nil {
		return s, fmt.Errorf("llama: %w", err)
	}
	defer clear(buf[:])
	m := mask(g.Bits)
	word := func(i int) uint64 { return binary.LittleEndian.Uint64(buf[8*i:]) & m }
	s.RIn[0], s.ROut = word(0), word(2)
	if g.Masks() == 2 {
		s.RIn[1] = word(1)
	}
	for f := 0; f < g.ShareFields(); f++ {
		s.Split[f] = word(3 + f)
	}
	for d := range g.DCFs() {
		copy(s.Roots[d][0][:], buf[80+32*d:])
		copy(s.Roots[d][1][:], buf[96+32*d:])
		s.Roots[d][1][0] = s.Roots[d][1][0]&^1 | (s.Roots[d][0][0]&1 ^ 1)
	}
	return s, nil
}
