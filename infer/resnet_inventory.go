package infer

import (
	"fmt"
	"sort"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
)

// KORD's published ResNet-18 inventory (ImageNet shape, ℓ = 32, scale 10):
// FSS trees per inference, and the DCF-32 lower bound it quotes.
const (
	KORDResNet18Trees      = 6726608
	KORDResNet18DCF32Bound = 5019112
	KORDResNet18KeygenSec  = 1.14
)

// LayerKeys is one lowered layer's material and online cost per
// evaluation in the streamed protocol (RunStream with the same chunk).
type LayerKeys struct {
	Layer  int    `json:"layer"` // index in the lowered model
	Kind   string `json:"kind"`
	In     string `json:"in"`
	Out    string `json:"out"`
	Values int    `json:"values"` // values compared (ReLU, Trunc, max-pool) or opened (linear)
	// Keys by kind ("dcf-32→32"), all derived in the modules.
	Keys         map[string]int `json:"keys,omitempty"`
	KeyTotal     int            `json:"key_total"`
	Correlations int            `json:"correlations"`
	CorrWords    int            `json:"correlation_words"`
	SessionWords int            `json:"session_weight_mask_words"`
	Rounds       int            `json:"rounds"`
	Bytes        int            `json:"bytes_party0"`
}

// StreamInventory is a model's whole streamed inventory.
type StreamInventory struct {
	Model    string         `json:"model"`
	Ring     int            `json:"ring"`
	Frac     int            `json:"frac"`
	Chunk    int            `json:"chunk"`
	Layers   []LayerKeys    `json:"layers"`
	Keys     map[string]int `json:"keys"`
	KeyTotal int            `json:"key_total"`
	// KeyParams is the shape of each kind of Keys.
	KeyParams    map[string]fss.Params `json:"-"`
	ReLUs        int                   `json:"relus"`        // ReLU values, max-pool comparisons included
	Truncations  int                   `json:"truncations"`  // values truncated
	Correlations int                   `json:"correlations"` // input correlations per evaluation
	CorrWords    int                   `json:"correlation_words_per_party"`
	SessionWords int                   `json:"session_weight_mask_words_per_party"`
	Rounds       int                   `json:"online_rounds"` // output round included, session opening not
	Bytes        int                   `json:"online_bytes_party0"`
	SessionBytes int                   `json:"session_bytes_per_party"`
	// MaterialBytes is each party's material per evaluation: per key its
	// share (kord-v1 size) and its α and β shares (⌈in/8⌉ + ⌈out/8⌉ bytes,
	// as the MNIST demo counts them), and the correlation words (⌈ℓ/8⌉
	// bytes each).
	MaterialBytes int64 `json:"material_bytes_per_party"`
	// KORD's figures, for ResNet-18 at ImageNet shape.
	KORDTrees      int     `json:"kord_trees,omitempty"`
	KORDDCF32Bound int     `json:"kord_dcf32_lower_bound,omitempty"`
	RatioToKORD    float64 `json:"key_total_over_kord_trees,omitempty"`
}

// KeyInventory returns the per-layer inventory of the lowered model in the
// streamed protocol with the given chunk (0: DefaultChunk), from the
// protocol's definition; TestResNetSmall checks it against a run.
func (m *Model) KeyInventory(chunk int) (*StreamInventory, error) {
	if chunk <= 0 {
		chunk = DefaultChunk
	}
	low, shapes, err := m.lowered()
	if err != nil {
		return nil, err
	}
	l := low.Ring
	inv := &StreamInventory{Model: m.Name, Ring: l, Frac: low.Frac, Chunk: chunk, Keys: map[string]int{}, KeyParams: map[string]fss.Params{}}
	w := int64((l + 7) / 8)
	addKeys := func(c *LayerKeys, p fss.Params, n int) {
		c.Keys[keyKind(p)] += n
		inv.KeyParams[keyKind(p)] = p
		inv.MaterialBytes += int64(n) * keyMaterial(p)
	}
	chunks := func(n int) []int {
		var out []int
		for lo := 0; lo < n; lo += chunk {
			out = append(out, min(n, lo+chunk)-lo)
		}
		return out
	}
	weights := 0
	for i := range low.Layers {
		ly := &low.Layers[i]
		in, o := shapes[i], shapes[i+1]
		c := LayerKeys{Layer: i, Kind: ly.Kind.String(), In: in.String(), Out: o.String(), Keys: map[string]int{}}
		relus := func(n int) {
			for _, k := range chunks(n) {
				addKeys(&c, fss.Params{Type: fss.DCF, InBits: l, OutBits: l}, 2*k)
				c.Rounds++
				c.Bytes += packed(3*k, l) + 4
			}
			c.Values += n
			inv.ReLUs += n
		}
		switch ly.Kind {
		case FC, Conv:
			c.Values = in.Len()
			c.Correlations, c.CorrWords, c.SessionWords = 1, in.Len()+o.Len(), ly.weightLen()
			inv.MaterialBytes += int64(c.CorrWords) * w
			c.Rounds, c.Bytes = 1, packed(in.Len(), l)+4
			weights += ly.weightLen()
		case ReLU:
			relus(in.Len())
		case MaxPool, MaxPool2D:
			for _, pass := range poolComparisons(ly, in, o) {
				for _, n := range pass {
					relus(n)
				}
			}
		case Trunc:
			for _, k := range chunks(in.Len()) {
				addKeys(&c, fss.Params{Type: fss.DCF, InBits: ly.S + 1, OutBits: l}, k)
				addKeys(&c, fss.Params{Type: fss.DCF, InBits: l + 1, OutBits: ly.S}, k)
				c.Rounds++
				c.Bytes += packed(k, ly.S+1) + packed(k, l+1) + 4
			}
			c.Values = in.Len()
			inv.Truncations += in.Len()
		}
		for k, v := range c.Keys {
			c.KeyTotal += v
			inv.Keys[k] += v
		}
		if len(c.Keys) == 0 {
			c.Keys = nil
		}
		inv.Layers = append(inv.Layers, c)
		inv.KeyTotal += c.KeyTotal
		inv.Correlations += c.Correlations
		inv.CorrWords += c.CorrWords
		inv.SessionWords += c.SessionWords
		inv.Rounds += c.Rounds
		inv.Bytes += c.Bytes
	}
	last := shapes[len(shapes)-1]
	inv.Rounds++
	inv.Bytes += packed(last.Len(), l) + 4
	inv.SessionBytes = packed(weights, l) + 4
	if c, ok := ParseResNetName(m.Name); ok && c == ResNet18ImageNet {
		inv.KORDTrees, inv.KORDDCF32Bound = KORDResNet18Trees, KORDResNet18DCF32Bound
		inv.RatioToKORD = float64(inv.KeyTotal) / KORDResNet18Trees
	}
	return inv, nil
}

// KeyKinds returns the inventory's key kinds in a stable order.
func (inv *StreamInventory) KeyKinds() []string {
	var ks []string
	for k := range inv.Keys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// String is a one-line summary.
func (inv *StreamInventory) String() string {
	return fmt.Sprintf("%s: %d keys (%d ReLU comparisons, %d truncations), %d correlations, %d rounds", inv.Model, inv.KeyTotal, inv.ReLUs, inv.Truncations, inv.Correlations, inv.Rounds)
}

// keyMaterial is one key's share with its α and β shares, in bytes.
func keyMaterial(p fss.Params) int64 {
	return int64(p.KeySize() + (p.InBits+7)/8 + (p.OutBits+7)/8)
}

// Correlations returns the shape of every linear layer's correlation in
// the lowered model, in evaluation order (Part CorrFull; a session asks
// for each as CorrWeight once and as CorrInput per evaluation), so that a
// key-supply benchmark can request them through the party daemons.
func (m *Model) Correlations() ([]msg.Correlation, error) {
	low, shapes, err := m.lowered()
	if err != nil {
		return nil, err
	}
	var out []msg.Correlation
	for i := range low.Layers {
		if l := &low.Layers[i]; l.Linear() {
			c, err := corrShape(l, shapes[i], low.Ring)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// lowered is m lowered (Lower) and the lowered model's wire shapes.
func (m *Model) lowered() (*Model, []Shape, error) {
	low, err := Lower(m)
	if err != nil {
		return nil, nil, err
	}
	shapes, err := low.Shapes()
	if err != nil {
		return nil, nil, err
	}
	return low, shapes, nil
}
