package msg

import "fmt"

// SubmitCorrelation asks for one derived multiplication correlation
// (SubmitRequest.Corr): both modules of a pair draw the same pseudorandom
// masks from their shared root PRF at the same counters, compute the
// product themselves, and each hands out only its own party's additive
// shares. Nothing crosses between the sites; no frame is returned. The
// counters are committed before the shares exist.
const SubmitCorrelation SubmitKind = 5

// CorrKind is the bilinear map of a correlation.
type CorrKind uint8

const (
	// CorrMatVec: A is an Out×In matrix (row-major), R a vector of In,
	// Z = A·R a vector of Out (a fully connected layer).
	CorrMatVec CorrKind = 1
	// CorrConv2D: A is Out×In×K×K, R is In×H×W, Z is the stride-1,
	// unpadded convolution, Out×(H−K+1)×(W−K+1)
	// (Z[o][y][x] = Σ_{i,ky,kx} A[o][i][ky][kx]·R[i][y+ky][x+kx]).
	CorrConv2D CorrKind = 2
	// CorrLlamaGates: not a product but EzPC LLAMA's gate key packs
	// (msg/gates.go): Relu ReLU packs, Ars arithmetic-shift packs by
	// Shift, MaxPool pair-MaxPool packs, all of width Ring (8..64), in that
	// order. R holds this party's shares of the input masks (r_in; two per
	// MaxPool pack, its inputs' in order), Z its shares of the output
	// masks (r_out), Packs its pack bytes; A is empty.
	CorrLlamaGates CorrKind = 3
	// CorrTriples: In independent Beaver triples, elementwise: A and R
	// vectors of In, Z = A⊙R (Out is 1).
	CorrTriples CorrKind = 4
	// CorrSquares: In squares, A a vector of In, Z = A⊙A, no R (Out is 1).
	CorrSquares CorrKind = 5
	// CorrBits: In random bits, A a vector of In with every A[i] ∈ {0, 1}
	// (shared additively mod 2^Ring), no R or Z (Out is 1).
	CorrBits CorrKind = 6
	// CorrMatMul: one matrix triple, A an Out×In matrix, R an In×W matrix,
	// Z = A·R an Out×W matrix, each row-major (MP-SPDZ's m×k×n is
	// Out×In×W).
	CorrMatMul CorrKind = 7
)

// Tuple reports whether k is one of the preprocessing kinds (triples,
// squares, bits, matrix triples): always fresh (Part CorrFull), derived
// under their whole description like every correlation (docs/protocol.md, "Tuples").
func (k CorrKind) Tuple() bool { return k >= CorrTriples && k <= CorrMatMul }

// CorrPart says which parts of a correlation a request draws.
type CorrPart uint8

const (
	// CorrFull draws A, R and Z = map(A, R), all fresh.
	CorrFull CorrPart = 0
	// CorrWeight draws only a weight mask A and keeps its shape, so that
	// later CorrInput requests can multiply fresh input masks with it (a
	// session's weights are opened under A once; see docs/inference.md).
	// The answer has A and no R or Z.
	CorrWeight CorrPart = 1
	// CorrInput draws a fresh R and Z = map(A, R) against the weight mask
	// A kept at counter WeightFrom (a CorrWeight of the same shape); the
	// answer has R and Z and no A.
	CorrInput CorrPart = 2
)

// MaxCorrWords bounds the words of A, R and Z of one correlation.
const MaxCorrWords = 1 << 22

// Correlation is the shape of one multiplication correlation over
// Z_{2^Ring}: a weight mask A, an input mask R and their product Z under
// the map Kind.
type Correlation struct {
	Kind    CorrKind
	Ring    int // ℓ, 1..64
	In, Out int
	K, H, W int // CorrConv2D only
	// Part is what to draw; WeightFrom (CorrInput only) the first counter
	// of the CorrWeight whose A to use.
	Part       CorrPart
	WeightFrom uint64
	// CorrLlamaGates only (zero otherwise): how many packs of each gate,
	// and the ARS shift (1 ≤ Shift < Ring when Ars > 0, else 0).
	Relu, Ars, Shift, MaxPool int
}

// Sizes returns the number of words of A, R and Z, or an error naming the
// field that is out of range.
func (c *Correlation) Sizes() (a, r, z int, err error) {
	if c == nil {
		return 0, 0, 0, fmt.Errorf("Corr: missing")
	}
	if c.Kind == CorrLlamaGates {
		return c.gateSizes()
	}
	if c.Relu != 0 || c.Ars != 0 || c.Shift != 0 || c.MaxPool != 0 {
		return 0, 0, 0, fmt.Errorf("Corr.Relu/Ars/Shift/MaxPool: only for LLAMA gate packs")
	}
	if c.Ring < 1 || c.Ring > 64 {
		return 0, 0, 0, fmt.Errorf("Corr.Ring: %d is outside 1..64", c.Ring)
	}
	const dim = 1 << 16
	if c.In < 1 || c.In > MaxCorrWords || c.Out < 1 || c.Out > dim {
		return 0, 0, 0, fmt.Errorf("Corr.In/Out: %d, %d out of range", c.In, c.Out)
	}
	if c.Kind.Tuple() {
		return c.tupleSizes()
	}
	switch c.Kind {
	case CorrMatVec:
		if c.K != 0 || c.H != 0 || c.W != 0 {
			return 0, 0, 0, fmt.Errorf("Corr.K/H/W: must be zero for a matrix-vector correlation")
		}
		a, r, z = c.In*c.Out, c.In, c.Out
	case CorrConv2D:
		if c.In > dim || c.H < 1 || c.W < 1 || c.H > dim || c.W > dim || c.K < 1 || c.K > c.H || c.K > c.W {
			return 0, 0, 0, fmt.Errorf("Corr.In/K/H/W: a %d×%d×%d input and a %d×%d kernel do not fit", c.In, c.H, c.W, c.K, c.K)
		}
		a, r, z = c.Out*c.In*c.K*c.K, c.In*c.H*c.W, c.Out*(c.H-c.K+1)*(c.W-c.K+1)
	default:
		return 0, 0, 0, fmt.Errorf("Corr.Kind: unknown kind %d", c.Kind)
	}
	switch c.Part {
	case CorrFull, CorrWeight:
		if c.WeightFrom != 0 {
			return 0, 0, 0, fmt.Errorf("Corr.WeightFrom: only for an input correlation")
		}
	case CorrInput:
	default:
		return 0, 0, 0, fmt.Errorf("Corr.Part: unknown part %d", c.Part)
	}
	if a > MaxCorrWords || r > MaxCorrWords || z > MaxCorrWords || a+r+z > MaxCorrWords {
		return 0, 0, 0, fmt.Errorf("Corr: %d words exceed %d", a+r+z, MaxCorrWords)
	}
	return a, r, z, nil
}

// tupleSizes is Sizes for the preprocessing kinds (CorrKind.Tuple).
func (c *Correlation) tupleSizes() (a, r, z int, err error) {
	if c.Part != CorrFull || c.WeightFrom != 0 {
		return 0, 0, 0, fmt.Errorf("Corr.Part: a %s correlation is always fresh (part 0, no WeightFrom)", c.Kind)
	}
	const dim = 1 << 16
	switch c.Kind {
	case CorrMatMul:
		if c.K != 0 || c.H != 0 {
			return 0, 0, 0, fmt.Errorf("Corr.K/H: must be zero for a matrix triple")
		}
		if c.Out < 1 || c.Out > dim || c.In < 1 || c.In > dim || c.W < 1 || c.W > dim {
			return 0, 0, 0, fmt.Errorf("Corr.Out/In/W: a %d×%d×%d matrix triple is out of range (each 1..%d)", c.Out, c.In, c.W, dim)
		}
		a, r, z = c.Out*c.In, c.In*c.W, c.Out*c.W
	default:
		if c.Out != 1 || c.K != 0 || c.H != 0 || c.W != 0 {
			return 0, 0, 0, fmt.Errorf("Corr.Out/K/H/W: must be 1, 0, 0, 0 for %s", c.Kind)
		}
		if c.In < 1 || c.In > MaxCorrWords {
			return 0, 0, 0, fmt.Errorf("Corr.In: %d %s is outside 1..%d", c.In, c.Kind, MaxCorrWords)
		}
		switch c.Kind {
		case CorrTriples:
			a, r, z = c.In, c.In, c.In
		case CorrSquares:
			a, z = c.In, c.In
		case CorrBits:
			a = c.In
		}
	}
	if a+r+z > MaxCorrWords {
		return 0, 0, 0, fmt.Errorf("Corr: %d words exceed %d", a+r+z, MaxCorrWords)
	}
	return a, r, z, nil
}

// String names the kind.
func (k CorrKind) String() string {
	switch k {
	case CorrMatVec:
		return "matrix-vector"
	case CorrConv2D:
		return "conv2d"
	case CorrTriples:
		return "triples"
	case CorrSquares:
		return "squares"
	case CorrBits:
		return "bits"
	case CorrMatMul:
		return "matrix triple"
	case CorrLlamaGates:
		return "LLAMA gate packs"
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

// Blocks returns the number of counters a request for c consumes: one
// per two words the modules draw for it (A and party 0's share of A for a
// CorrWeight; R, party 0's shares of R and Z for a CorrInput; all five
// for a CorrFull). Both modules, and the hosts that order their requests,
// compute it from the shape alone.
func (c *Correlation) Blocks() (int, error) {
	na, nr, nz, err := c.Sizes()
	if err != nil {
		return 0, err
	}
	if c.Kind == CorrLlamaGates {
		return c.Packs(), nil // one counter per pack
	}
	var words int
	switch c.Part {
	case CorrFull:
		words = 2*na + 2*nr + nz
	case CorrWeight:
		words = 2 * na
	case CorrInput:
		words = 2*nr + nz
	}
	return (words + 1) / 2, nil
}

// CorrShares is one party's share of a derived correlation: additive
// shares mod 2^Ring of A, R and Z = map(A, R). Counter is the first of
// the Blocks counters it consumed. PairTag agrees with the peer module's
// exactly when both drew the correlation of the same shape at the same
// counter; it tells nothing about the masks. The holder wipes it.
type CorrShares struct {
	Counter uint64
	Blocks  int
	Corr    Correlation
	A, R, Z []uint64
	// Packs is this party's LLAMA gate packs (CorrLlamaGates), end to end
	// in LLAMA's layout; empty for every other kind.
	Packs   []byte
	PairTag [PairTagSize]byte
}

// Wipe zeroes the shares.
func (c *CorrShares) Wipe() {
	if c == nil {
		return
	}
	clear(c.A)
	clear(c.R)
	clear(c.Z)
	clear(c.Packs)
}
