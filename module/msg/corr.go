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
)

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
