package infer

import (
	"fmt"
	"time"
)

// SupplyOnly draws a whole evaluation's material for model (lowered here)
// from src step by step, as RunStream's supplier does, and wipes each
// step at once (no online phase). It returns each party's material bytes.
func SupplyOnly(model *Model, src Sources, chunk int) (int64, error) {
	b, _, err := SupplyOnlyTimed(model, src, chunk)
	return b, err
}

// SupplyOnlyTimed is SupplyOnly, also returning the time the session's weight
// masks took (NewSupply).
func SupplyOnlyTimed(model *Model, src Sources, chunk int) (int64, time.Duration, error) {
	if chunk <= 0 {
		chunk = DefaultChunk
	}
	low, err := Lower(model)
	if err != nil {
		return 0, 0, err
	}
	arch := low.Arch()
	shapes, err := arch.Shapes()
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	sp, sess, err := NewSupply(arch, src)
	session := time.Since(t0)
	if err != nil {
		return 0, 0, err
	}
	sess[0].Wipe()
	sess[1].Wipe()
	keys := map[string]int{}
	var total int64
	for _, st := range plan(arch, shapes, chunk) {
		m, _, err := sp.genStep(st, keys)
		if err != nil {
			return 0, 0, fmt.Errorf("infer: offline, layer %d (%v): %w", st.layer, arch.Layers[st.layer].Kind, err)
		}
		total += m[0].bytes(arch.Ring)
		m[0].wipe()
		m[1].wipe()
	}
	return total, session, nil
}
