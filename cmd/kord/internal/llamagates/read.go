package llamagates

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kord-fss/kord/fss/llama"
)

// Files is a gates directory read back.
type Files struct {
	Params Params
	Dat    [2][]byte // server.dat, client.dat
	// RIn[b][run], ROut[b][run]: party b's mask shares of run 0 (ReLU),
	// 1 (ARS), 2 (MaxPool).
	RIn, ROut [2][3][]uint64
}

// IsGates reports whether dir's params.json describes a gates directory
// (false, nil when it describes something else, such as a DCF export).
func IsGates(dir string) (bool, error) {
	js, err := os.ReadFile(filepath.Join(dir, ParamsJSON))
	if err != nil {
		return false, fmt.Errorf("llamagates: %w", err)
	}
	var p struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(js, &p); err != nil {
		return false, bad("%s: %v", ParamsJSON, err)
	}
	return p.Type == "gates", nil
}

// check reports whether p describes a gates directory kord can read.
func (p Params) check() error {
	c := Config{Dir: ".", Bits: p.Bits, Relu: p.Relu, Ars: p.Ars, MaxPool: p.MaxPool, Shift: p.Shift}
	switch {
	case p.Profile != "llama" || p.Type != "gates":
		return bad("%s: profile %q type %q, want llama gates", ParamsJSON, p.Profile, p.Type)
	}
	if err := c.Validate(); err != nil {
		return bad("%s: %v", ParamsJSON, err)
	}
	return nil
}

// Read reads a gates directory back, checking every size against
// params.json: each .dat file must be exactly the packs it gives, every
// pack must parse, and each masks file must hold the right number of
// decimal shares below 2^bits.
func Read(dir string) (*Files, error) {
	js, err := os.ReadFile(filepath.Join(dir, ParamsJSON))
	if err != nil {
		return nil, fmt.Errorf("llamagates: %w", err)
	}
	var f Files
	if err := json.Unmarshal(js, &f.Params); err != nil {
		return nil, bad("%s: %v", ParamsJSON, err)
	}
	p := f.Params
	if err := p.check(); err != nil {
		return nil, err
	}
	for b, names := range [2][2]string{{ServerDat, ServerMasks}, {ClientDat, ClientMasks}} {
		path := filepath.Join(dir, names[0])
		st, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("llamagates: %w", err)
		}
		if st.Size() != p.DatBytes() {
			return nil, bad("%s is %d bytes, want %d: %d ReLU, %d ARS and %d MaxPool packs of %d bits", path, st.Size(), p.DatBytes(), p.Relu, p.Ars, p.MaxPool, p.Bits)
		}
		if f.Dat[b], err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("llamagates: %w", err)
		}
		if int64(len(f.Dat[b])) != p.DatBytes() {
			return nil, bad("%s changed size while it was read", path)
		}
		off := 0
		for _, r := range p.Runs() {
			if r.N == 0 {
				continue
			}
			n := r.N * r.G.PackSize()
			if _, err := llama.SplitGates(r.G, f.Dat[b][off:off+n]); err != nil {
				return nil, bad("%s: %s packs from offset %d: %v", path, r.Name, off, err)
			}
			off += n
		}
		if err := f.readMasks(filepath.Join(dir, names[1]), b); err != nil {
			return nil, err
		}
	}
	return &f, nil
}

func (f *Files) readMasks(path string, b int) error {
	js, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("llamagates: %w", err)
	}
	return f.parseMasks(path, b, js)
}

// parseMasks reads party b's masks file (its bytes js, named path in
// errors): every list must hold exactly the shares params.json gives,
// each a decimal below 2^bits.
func (f *Files) parseMasks(path string, b int, js []byte) error {
	var m Masks
	if err := json.Unmarshal(js, &m); err != nil {
		return bad("%s: %v", path, err)
	}
	lim := llama.Gate{Bits: f.Params.Bits}
	for i, r := range f.Params.Runs() {
		set := m.set(i)
		var err error
		if f.RIn[b][i], err = parseShares(path, r.Name+".r_in", set.RIn, r.N*r.G.Masks(), lim.Bits); err != nil {
			return err
		}
		if f.ROut[b][i], err = parseShares(path, r.Name+".r_out", set.ROut, r.N, lim.Bits); err != nil {
			return err
		}
	}
	return nil
}

func parseShares(path, field string, ss []string, n, bits int) ([]uint64, error) {
	if len(ss) != n {
		return nil, bad("%s: %s has %d shares, want %d", path, field, len(ss), n)
	}
	out := make([]uint64, n)
	for i, s := range ss {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, bad("%s: %s[%d]: %q is not a decimal share", path, field, i, s)
		}
		if bits < 64 && v>>uint(bits) != 0 {
			return nil, bad("%s: %s[%d]: %d does not fit in %d bits", path, field, i, v, bits)
		}
		out[i] = v
	}
	return out, nil
}

// Runs returns the directory's non-empty runs with both parties' packs
// and mask shares, for llama.CheckGates and llama.RedealGates.
func (f *Files) Runs() []*llama.GateRun {
	var out []*llama.GateRun
	off := 0
	for i, r := range f.Params.Runs() {
		if r.N == 0 {
			continue
		}
		n := r.N * r.G.PackSize()
		gr := &llama.GateRun{G: r.G, N: r.N}
		for b := range 2 {
			gr.Packs[b] = f.Dat[b][off : off+n]
			gr.RIn[b], gr.ROut[b] = f.RIn[b][i], f.ROut[b][i]
		}
		off += n
		out = append(out, gr)
	}
	return out
}

// Verify evaluates every pack with both parties' packs (LLAMA's online
// step) at points random masked inputs each and checks ReLU, the exact
// arithmetic shift and the signed max (MaxPool pairs with |x| + |y| <
// 2^(bits−1)).
func (f *Files) Verify(points int) error {
	for _, r := range f.Runs() {
		if err := llama.CheckGates(r, points); err != nil {
			return fmt.Errorf("llamagates: %w", err)
		}
	}
	return nil
}
