package gates

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kord-fss/kord/fss"
)

// Row is one line of the cost table: one block at one width, measured in
// this run.
type Row struct {
	Block   string `json:"block"`
	Variant string `json:"variant,omitempty"`
	InBits  int    `json:"in_bits"`
	// Keys is the per-operation key complement, e.g. "1×DCF 8→8 derived".
	Keys []string `json:"keys"`
	// OfflineWireBytes is the module protocol's offline bytes per party per
	// operation for the keys actually requested (keystream tier: ⌈ℓ/8⌉+⌈n/8⌉
	// per bound key, 0 per derived key), one module round. When the source
	// reports what its link carried, a row whose count differs fails.
	OfflineWireBytes float64 `json:"offline_wire_bytes_per_party"`
	// OfflineLinkBytes is what the host link actually carried per party per
	// operation, when the keys came from modules (nil with the dealer).
	OfflineLinkBytes *float64 `json:"offline_link_bytes_per_party,omitempty"`
	// OnlineBytes is the bytes each party wrote to its TCP socket per
	// operation (4-byte frame headers included, amortised over the batch).
	OnlineBytes  float64 `json:"online_bytes_per_party"`
	OnlineRounds int64   `json:"online_rounds"`
	// XingRounds and XingBits are Xing et al.'s dealerless generation cost
	// for the same complement from their published formulas (DPF: 9ℓ+5
	// rounds, 18λℓ+5λ+13ℓ+2 bits; DCF: 16ℓ+7 rounds, bits unpublished), summed
	// over the keys. XingBits is nil when a DCF is in the complement.
	XingRounds int    `json:"xing_offline_rounds"`
	XingBits   *int64 `json:"xing_offline_bits"`
	// KordPublished is KORD's published per-operation size in bytes, where
	// it publishes one for this block and width.
	KordPublished *int `json:"kord_published_bytes,omitempty"`
	// Verified is true only if this row's check passed in this run, on at
	// least one input, and the offline bytes matched the link's count.
	Verified bool   `json:"verified"`
	Check    string `json:"check"`
	Source   string `json:"key_source"`
	Ops      int    `json:"ops"`
	Error    string `json:"error,omitempty"`
}

// kordPublished is KORD's published per-op message sizes (bytes).
var kordPublished = map[string]int{
	"EQ/8": 2, "EQ/16": 4, "CMP/8": 4, "CMP/16": 8, "CMP/18": 12,
	"PriLUT/8": 512, "Approx/8": 100, "Approx/18": 198,
}

// XingKeyCost returns Xing et al.'s published dealerless cost of one key:
// rounds, and bits (ok = false for a DCF, whose bit count is unpublished).
func XingKeyCost(p fss.Params) (rounds int, bits int64, ok bool) {
	const lambda = 128
	l := p.InBits
	if p.Type == fss.DPF {
		return 9*l + 5, int64(18*lambda*l + 5*lambda + 13*l + 2), true
	}
	return 16*l + 7, 0, false
}

// TableOptions configure Measure.
type TableOptions struct {
	Bits []int // widths; nil means 8, 16, 18, 32, 64
	Ops  int   // operations per random check (0 = 256)
	// Source returns the key source for the run and a function reporting
	// the bytes its link has carried per party (nil when it cannot tell).
	Source     KeySource
	LinkBytes  func() [2]uint64
	SourceName string
	Rand       io.Reader // local randomness and tables (nil = crypto/rand)
}

// Measure runs every standard gate at every width: it generates the key
// material through a Meter around the source, runs both parties over
// loopback TCP, checks every output against the plaintext reference
// (exhaustively at ℓ = 8, on random and edge inputs above), and reports
// the counted costs.
func Measure(o TableOptions) ([]Row, error) {
	if o.Source == nil {
		o.Source = &DealerSource{Rand: o.Rand}
		o.SourceName = "dealer (baseline)"
	}
	bits := o.Bits
	if bits == nil {
		bits = []int{8, 16, 18, 32, 64}
	}
	ops := o.Ops
	if ops <= 0 {
		ops = 256
	}
	var rows []Row
	for _, l := range bits {
		gs, err := StandardGates(l, o.Rand)
		if err != nil {
			return nil, err
		}
		for _, g := range gs {
			rows = append(rows, measureOne(g, o, ops))
		}
	}
	return rows, nil
}

func measureOne(g Gate, o TableOptions, ops int) Row {
	row := Row{Block: g.Name(), Variant: g.Variant(), InBits: g.InBits(), Source: o.SourceName}
	if v, ok := kordPublished[fmt.Sprintf("%s/%d", g.Name(), g.InBits())]; ok {
		row.KordPublished = &v
	}
	var in [][]uint64
	var err error
	if g.InBits() <= 8 {
		in = AllInputs(g)
		row.Check = fmt.Sprintf("exhaustive, %d inputs", len(in))
	} else {
		n := ops
		if (g.Name() == "PubLUT" || g.Name() == "Approx") && g.InBits() > 12 {
			n = min(ops, 16) // full-domain evaluation per operation
		}
		in, err = RandomInputs(g, o.Rand, n)
		row.Check = fmt.Sprintf("random + edges, %d inputs", len(in))
	}
	if err == nil && len(in) == 0 {
		err = fmt.Errorf("gates: %s: no valid input to check", g.Name())
	}
	if err != nil {
		row.Error = err.Error()
		return row
	}
	row.Ops = len(in)
	meter := &Meter{Src: o.Source}
	var before [2]uint64
	if o.LinkBytes != nil {
		before = o.LinkBytes()
	}
	st, err := Check(g, meter, o.Rand, in)
	if o.LinkBytes != nil {
		after := o.LinkBytes()
		v := float64(max(after[0]-before[0], after[1]-before[1])) / float64(len(in))
		row.OfflineLinkBytes = &v
	}
	row.OfflineWireBytes = float64(meter.Bytes()) / float64(len(in))
	row.Keys = summarize(meter.Uses(), len(in))
	rounds, total, complete := 0, int64(0), true
	for _, u := range meter.Uses() {
		r, b, ok := XingKeyCost(u.Params)
		rounds += r
		total += b
		complete = complete && ok
	}
	rounds /= max(len(in), 1) // every operation has the same complement
	total /= int64(max(len(in), 1))
	row.XingRounds = rounds
	if complete {
		row.XingBits = &total
	}
	row.OnlineBytes = float64(max(st.BytesSent[0], st.BytesSent[1])) / float64(len(in))
	row.OnlineRounds = max(st.Rounds[0], st.Rounds[1])
	if err == nil && row.OfflineLinkBytes != nil && *row.OfflineLinkBytes != row.OfflineWireBytes {
		// The offline column comes from the keys requested; where the link
		// counted what it carried, the two must agree for the row to stand.
		err = fmt.Errorf("gates: %s: offline bytes %.2f per operation from the keys requested, but the host link carried %.2f",
			g.Name(), row.OfflineWireBytes, *row.OfflineLinkBytes)
	}
	if err != nil {
		row.Error = err.Error()
		return row
	}
	row.Verified = true
	return row
}

// summarize groups the recorded keys into per-operation counts.
func summarize(uses []KeyUse, ops int) []string {
	count := map[string]int{}
	for _, u := range uses {
		mode := "bound"
		if u.Derived {
			mode = "derived"
		}
		count[fmt.Sprintf("%s %d→%d %s", strings.ToUpper(u.Params.Type.String()), u.Params.InBits, u.Params.OutBits, mode)]++
	}
	var out []string
	for k, c := range count {
		out = append(out, fmt.Sprintf("%d×%s", c/max(ops, 1), k))
	}
	sort.Strings(out)
	return out
}
