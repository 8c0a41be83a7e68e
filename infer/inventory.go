package infer

import "fmt"

// LayerCost is the offline and online cost of one layer per evaluation,
// from the protocol's definition (docs/inference.md); the tests check it
// against what a run measures.
type LayerCost struct {
	Layer int
	Kind  Kind
	// Ops is the number of values the layer opens or compares per
	// evaluation (inputs for linear layers and ReLU/Trunc, ReLUs in a
	// max-pool tree).
	Ops int
	// Keys is the DCF key pairs per evaluation (all derived).
	Keys int
	// CorrWords is each party's input-correlation words (R and Z) per
	// evaluation; SessionWords its weight-mask words, once per session.
	CorrWords, SessionWords int
	// Rounds and Bytes: online rounds and bytes party 0 sends per
	// evaluation (4-byte frame header per round); SessionBytes the weight
	// opening's share of this layer (without the one header).
	Rounds, Bytes int
	SessionBytes  int
}

func packed(n, bits int) int { return (n*bits + 7) / 8 }

// Inventory returns the cost of every layer and, as a last entry with
// Layer = -1, the output round (party 0 sends the logits).
func (m *Model) Inventory() ([]LayerCost, error) {
	shapes, err := m.Shapes()
	if err != nil {
		return nil, err
	}
	l := m.Ring
	var out []LayerCost
	for i := range m.Layers {
		ly := &m.Layers[i]
		in, o := shapes[i], shapes[i+1]
		c := LayerCost{Layer: i, Kind: ly.Kind}
		if extName(ly.Kind) != "" {
			return nil, fmt.Errorf("infer: layer %d (%v) runs only in the streamed protocol: use KeyInventory", i, ly.Kind)
		}
		switch ly.Kind {
		case FC, Conv:
			c.Ops = in.Len()
			c.CorrWords = in.Len() + o.Len()
			c.SessionWords = ly.weightLen()
			c.Rounds, c.Bytes = 1, packed(in.Len(), l)+4
			c.SessionBytes = packed(ly.weightLen(), l)
		case ReLU:
			c.Ops, c.Keys = in.Len(), 2*in.Len()
			c.Rounds, c.Bytes = 1, packed(3*in.Len(), l)+4
		case MaxPool:
			for _, n := range poolLevels(ly.K * ly.K) {
				ops := n * o.Len()
				c.Ops += ops
				c.Keys += 2 * ops
				c.Rounds++
				c.Bytes += packed(3*ops, l) + 4
			}
		case Trunc:
			n := in.Len()
			c.Ops, c.Keys = n, 2*n
			if l <= 63 { // one round: s+1 and ℓ+1 bits per value in one frame
				c.Rounds = 1
				c.Bytes = packed(n, ly.S+1) + packed(n, l+1) + 4
			} else { // ℓ = 64: TR then the lift, s+1 and ℓ−s+1 bits
				c.Rounds = 2
				c.Bytes = packed(n, ly.S+1) + 4 + packed(n, l-ly.S+1) + 4
			}
		}
		out = append(out, c)
	}
	last := shapes[len(shapes)-1]
	out = append(out, LayerCost{Layer: -1, Rounds: 1, Bytes: packed(last.Len(), l) + 4})
	return out, nil
}
