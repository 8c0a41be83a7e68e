package infer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/gates"
)

// Streamed evaluation, for models whose material does not fit in memory
// (ResNet-18 at ImageNet shape needs about 11 million DCF keys per
// inference, some 9 GB per party as parsed keys). The lowered model
// (Lower) is cut into steps: one per linear layer (its input correlation)
// and, for ReLU, Trunc and each level of a max-pool tree, one per chunk
// of at most StreamConfig.Chunk values (each chunk is one online round of
// its own). A supplier draws each step's material for both parties from
// the Sources and hands it over through a channel of StreamConfig.Ahead
// steps, so at most Ahead+2 steps' material exist at once (one being
// drawn, Ahead waiting, one being used), whatever the model's size.
// With Overlap the supplier runs ahead while the parties evaluate; without
// it, it draws step i+1 only once both parties have finished step i, so
// supply and online time are measured apart (their sum is the wall time).
// Material stays single-use and is wiped after use, as in Eval.

// DefaultChunk is the default number of values per non-linear step.
const DefaultChunk = 1 << 16

// StreamConfig configures RunStream.
type StreamConfig struct {
	// Chunk bounds the values of one non-linear step (0: DefaultChunk).
	Chunk int
	// Overlap runs key supply ahead of, and concurrently with, the online
	// phase; otherwise the two alternate step by step.
	Overlap bool
	// Ahead is the number of steps the supplier may hold ready with
	// Overlap (0: 1, or as PrefetchBytes allows). Without Overlap it is 0.
	Ahead int
	// PrefetchBytes, with Overlap and no Ahead, sets Ahead: as many steps
	// as fit, both parties' material of the largest step counted (at
	// least 1).
	PrefetchBytes int64
	// Progress, when set, receives one line per layer that has material
	// (values, keys, supply and online time and rate, elapsed).
	Progress io.Writer
	// Pair connects the two online parties (nil: LoopbackPair, an
	// unshaped loopback TCP connection). The runners pass a shaped one.
	Pair func() (net.Conn, net.Conn, error)
}

// StreamReport is the cost of one streamed evaluation.
type StreamReport struct {
	Layers  int  `json:"layers_lowered"`
	Steps   int  `json:"steps"`
	Chunk   int  `json:"chunk"`
	Overlap bool `json:"overlap"`
	// Keys counts the DCF/DPF key pairs by kind ("dcf-32→32"), all
	// derived; KeysTotal their sum.
	Keys      map[string]int `json:"keys"`
	KeysTotal int            `json:"keys_total"`
	// Correlations: input correlations per evaluation and their words per
	// party; session weight masks and their words.
	Correlations      int     `json:"correlations"`
	CorrWords         int     `json:"correlation_words_per_party"`
	WeightMasks       int     `json:"session_weight_masks"`
	WeightMaskWords   int     `json:"session_weight_mask_words_per_party"`
	SessionOfflineMs  float64 `json:"session_offline_ms"`
	SessionOnlineMs   float64 `json:"session_online_ms"`
	SessionBytes      int64   `json:"session_online_bytes_per_party"`
	SupplyMs          float64 `json:"key_supply_ms"`
	OnlineMs          float64 `json:"online_ms"`
	WallMs            float64 `json:"wall_ms"`
	OnlineBytes       int64   `json:"online_bytes_per_party"`
	OnlineRounds      int64   `json:"online_rounds"`
	PeakRSSBytes      int64   `json:"peak_rss_bytes"`
	MaterialStepBytes int64   `json:"max_step_material_bytes_per_party"`
	// KeyWaitMs is the time the online parties waited for material (the
	// party that waited longer), with Overlap; Ahead the steps the
	// supplier could hold ready.
	KeyWaitMs float64 `json:"online_key_wait_ms"`
	Ahead     int     `json:"ahead_steps"`
}

type step struct{ layer, level, lo, hi int }

type stepMat struct {
	lin   *LinearCorr
	relu  *reluMat
	trunc *truncMat
}

func (s *stepMat) wipe() {
	if s == nil {
		return
	}
	s.lin.wipe()
	s.relu.wipe()
	s.trunc.wipe()
}

// plan lists the steps of lowered model m in evaluation order.
func plan(m *Model, shapes []Shape, chunk int) []step {
	var out []step
	cut := func(layer, level, n int) {
		for lo := 0; lo < n; lo += chunk {
			out = append(out, step{layer, level, lo, min(n, lo+chunk)})
		}
	}
	for i := range m.Layers {
		l := &m.Layers[i]
		switch {
		case l.Kind == FC || l.Kind == Conv:
			out = append(out, step{layer: i})
		case l.Kind == ReLU || l.Kind == Trunc:
			cut(i, 0, shapes[i].Len())
		default:
			if l.Kind == MaxPool || l.Kind == MaxPool2D {
				lv := 0
				for _, pass := range poolComparisons(l, shapes[i], shapes[i+1]) {
					for _, n := range pass {
						cut(i, lv, n)
						lv++
					}
				}
			}
		}
	}
	return out
}

func keyKind(p fss.Params) string {
	return fmt.Sprintf("%s-%d→%d", strings.ToLower(p.Type.String()), p.InBits, p.OutBits)
}

// genStep draws both parties' material for one step and counts its keys.
func (sp *Supply) genStep(st step, keys map[string]int) ([2]*stepMat, int, error) {
	var out [2]*stepMat
	l := &sp.arch.Layers[st.layer]
	ring := sp.arch.Ring
	n := st.hi - st.lo
	switch {
	case l.Kind == FC || l.Kind == Conv:
		in, o := sp.shapes[st.layer], sp.shapes[st.layer+1]
		c, err := sp.src.Corr.Input(sp.weights[st.layer], l, in, ring)
		if err == nil && (len(c[0].R) != in.Len() || len(c[1].R) != in.Len() || len(c[0].Z) != o.Len() || len(c[1].Z) != o.Len()) {
			err = errors.New("input correlation of the wrong size")
		}
		if err != nil {
			return out, 0, err
		}
		out[0], out[1] = &stepMat{lin: c[0]}, &stepMat{lin: c[1]}
		return out, 0, nil
	case l.Kind == Trunc:
		m, err := truncGen(sp.src.Keys, ring, l.S, n)
		if err != nil {
			return out, 0, err
		}
		keys[keyKind(fss.Params{Type: fss.DCF, InBits: l.S + 1, OutBits: ring})] += n
		keys[keyKind(fss.Params{Type: fss.DCF, InBits: ring + 1, OutBits: l.S})] += n
		out[0], out[1] = &stepMat{trunc: m[0]}, &stepMat{trunc: m[1]}
		return out, 2 * n, nil
	default: // ReLU and max-pool levels
		m, err := reluGen(sp.src.Keys, ring, n)
		if err != nil {
			return out, 0, err
		}
		keys[keyKind(fss.Params{Type: fss.DCF, InBits: ring, OutBits: ring})] += 2 * n
		out[0], out[1] = &stepMat{relu: m[0]}, &stepMat{relu: m[1]}
		return out, 2 * n, nil
	}
}

// evalStream is party p's online phase of the lowered model m (the owner
// with its weights, the client with the architecture) on material taken
// step by step from next. It returns the client's output wire (signed);
// the owner gets nil. done(layer) is called as each layer finishes.
func evalStream(p *gates.Party, m *Model, shapes []Shape, sess *Session, next func() (*stepMat, error), image []int64, done func(int)) ([]int64, error) {
	ring := m.Ring
	mk := mask(ring)
	if m.Ring > 63 {
		return nil, errors.New("infer: the streamed evaluation needs ℓ ≤ 63")
	}
	if p.B == 1 && len(image) != m.Input.Len() {
		return nil, fmt.Errorf("%w: image has %d values, the model takes %v = %d", ErrInput, len(image), m.Input, m.Input.Len())
	}
	cur := make([]uint64, m.Input.Len())
	if p.B == 1 {
		for i, v := range image {
			cur[i] = uint64(v) & mk
		}
	}
	var slots [maxSlots][]uint64
	take := func() (*stepMat, error) {
		s, err := next()
		if err == nil && s == nil {
			err = errors.New("key supply ended early")
		}
		return s, err
	}
	for i := range m.Layers {
		ly := &m.Layers[i]
		in, o := shapes[i], shapes[i+1]
		var err error
		switch ly.Kind {
		case FC, Conv:
			var s *stepMat
			if s, err = take(); err == nil {
				cur, err = linearOnline(p, ly, in, o, ring, sess.a[i], sess.what[i], s.lin, cur)
				s.wipe()
			}
		case ReLU, Trunc:
			y := make([]uint64, 0, len(cur))
			for len(y) < len(cur) && err == nil {
				var s *stepMat
				if s, err = take(); err != nil {
					break
				}
				lo, n := len(y), 0
				if ly.Kind == ReLU && s.relu != nil {
					n = len(s.relu.f)
				} else if ly.Kind == Trunc && s.trunc != nil {
					n = len(s.trunc.c)
				}
				if n == 0 || lo+n > len(cur) {
					s.wipe()
					err = fmt.Errorf("%v material of the wrong kind or size", ly.Kind)
					break
				}
				var part []uint64
				if ly.Kind == ReLU {
					part, err = reluEval(p, ring, s.relu, cur[lo:lo+n])
				} else {
					part, err = truncEval(p, ring, ly.S, s.trunc, cur[lo:lo+n])
				}
				s.wipe()
				y = append(y, part...)
			}
			cur = y
		case MaxPool, MaxPool2D:
			cur, err = poolStream(p, ring, ly, in, o, take, cur)
		case Flatten:
		case AvgPool:
			c := avgMul(ly.K, ly.S)
			idx := poolWindows(in, o, ly.K, ly.K, 0)
			kk := ly.K * ly.K
			y := make([]uint64, o.Len())
			for j := range y {
				var sum uint64
				for _, t := range idx[j*kk : (j+1)*kk] {
					sum += cur[t]
				}
				y[j] = sum * c & mk
			}
			cur = y
		case Save:
			slots[ly.S] = append([]uint64(nil), cur...)
		case Swap:
			if slots[ly.S] == nil {
				err = errSlot
				break
			}
			cur, slots[ly.S] = slots[ly.S], cur
		case Add:
			if len(slots[ly.S]) != len(cur) {
				err = errSlot
				break
			}
			for j, v := range slots[ly.S] {
				cur[j] = (cur[j] + v) & mk
			}
		case Concat:
			if slots[ly.S] == nil {
				err = errSlot
				break
			}
			cur = append(append([]uint64(nil), slots[ly.S]...), cur...)
		case LoadSlot:
			if slots[ly.S] == nil {
				err = errSlot
				break
			}
			cur = append([]uint64(nil), slots[ly.S]...)
		case SpaceToDepth:
			cur = gather(cur, s2dIndex(ly, in, o))
		default:
			err = fmt.Errorf("layer kind %v has no streamed protocol (Lower the model first)", ly.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("infer: party %d, layer %d (%v): %w", p.B, i, ly.Kind, err)
		}
		if done != nil {
			done(i)
		}
	}
	return output(p, cur, ring)
}

// poolStream is a max-pool (poolPasses; padding shares 0), each pass's
// windows reduced by the tree max(a, b) = b + ReLU(a − b), each level's
// ReLUs in chunks.
func poolStream(p *gates.Party, ring int, ly *Layer, in, o Shape, take func() (*stepMat, error), x []uint64) ([]uint64, error) {
	mk := mask(ring)
	for _, ps := range poolPasses(ly, in, o) {
		vals := gather(x, ps.idx)
		width := ps.k // values per window at this level
		for width > 1 {
			diffs := make([]uint64, 0, ps.n*(width/2))
			for w := 0; w < ps.n; w++ {
				win := vals[w*width : (w+1)*width]
				for j := 0; j+1 < width; j += 2 {
					diffs = append(diffs, (win[j]-win[j+1])&mk)
				}
			}
			r := make([]uint64, 0, len(diffs))
			for lo := 0; lo < len(diffs); {
				s, err := take()
				if err != nil {
					return nil, err
				}
				if s.relu == nil || lo+len(s.relu.f) > len(diffs) || len(s.relu.f) == 0 {
					s.wipe()
					return nil, errors.New("max-pool material of the wrong size")
				}
				hi := lo + len(s.relu.f)
				part, err := reluEval(p, ring, s.relu, diffs[lo:hi])
				s.wipe()
				if err != nil {
					return nil, err
				}
				r = append(r, part...)
				lo = hi
			}
			nw := (width + 1) / 2
			next := make([]uint64, ps.n*nw)
			at := 0
			for w := 0; w < ps.n; w++ {
				win := vals[w*width : (w+1)*width]
				dst := next[w*nw : (w+1)*nw]
				for j := 0; j+1 < width; j += 2 {
					dst[j/2] = (win[j+1] + r[at]) & mk
					at++
				}
				if width%2 == 1 {
					dst[nw-1] = win[width-1]
				}
			}
			vals, width = next, nw
		}
		x = vals
	}
	return x, nil
}

// RunStream is one complete secure evaluation of model (the owner's, with
// weights; any kinds, lowered here) on image, both parties in this
// process over a TCP connection (cfg.Pair: loopback unless given), material
// streamed from src as described above, in a session of its own (weight
// masks drawn and the weights opened once, timed apart). It returns the client's output.
func RunStream(ctx context.Context, model *Model, image []int64, src Sources, cfg StreamConfig) ([]int64, *StreamReport, error) {
	if cfg.Chunk <= 0 {
		cfg.Chunk = DefaultChunk
	}
	low, err := Lower(model)
	if err != nil {
		return nil, nil, err
	}
	if err := low.Validate(true); err != nil {
		return nil, nil, err
	}
	if len(image) != low.Input.Len() {
		return nil, nil, fmt.Errorf("%w: image has %d values, the model takes %v = %d", ErrInput, len(image), low.Input, low.Input.Len())
	}
	arch := low.Arch()
	shapes, err := low.Shapes()
	if err != nil {
		return nil, nil, err
	}
	rep := &StreamReport{Layers: len(low.Layers), Chunk: cfg.Chunk, Overlap: cfg.Overlap, Keys: map[string]int{}}
	t0 := time.Now()
	sp, sess, err := NewSupply(arch, src)
	if err != nil {
		return nil, nil, err
	}
	defer sess[0].Wipe()
	defer sess[1].Wipe()
	rep.SessionOfflineMs = ms2(time.Since(t0))
	for i, w := range sp.weights {
		if w != nil {
			rep.WeightMasks++
			rep.WeightMaskWords += len(sess[0].a[i])
		}
	}
	pair := cfg.Pair
	if pair == nil {
		pair = LoopbackPair
	}
	a0, a1, err := pair()
	if err != nil {
		return nil, nil, err
	}
	c0, c1 := gates.NewConn(a0), gates.NewConn(a1)
	defer c0.Close()
	defer c1.Close()
	conns := [2]*gates.Conn{c0, c1}
	t1 := time.Now()
	if err := OpenSessions(conns, low, sess); err != nil {
		return nil, nil, err
	}
	rep.SessionOnlineMs = ms2(time.Since(t1))
	rep.SessionBytes = max(c0.Sent(), c1.Sent())
	c0.ResetCounters()
	c1.ResetCounters()

	steps := plan(arch, shapes, cfg.Chunk)
	rep.Steps = len(steps)
	if cfg.Ahead <= 0 && cfg.PrefetchBytes > 0 {
		var most int64
		for _, st := range steps {
			most = max(most, stepBytes(arch, shapes, st))
		}
		cfg.Ahead = int(cfg.PrefetchBytes / max(2*most, 1))
	}
	if cfg.Ahead <= 0 {
		cfg.Ahead = 1
	}
	if !cfg.Overlap {
		cfg.Ahead = 0
	}
	rep.Ahead = cfg.Ahead
	var waited [2]time.Duration // per party, with Overlap
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var ch [2]chan *stepMat
	var ready [2]chan struct{}
	for b := 0; b < 2; b++ {
		ch[b] = make(chan *stepMat, cfg.Ahead)
		ready[b] = make(chan struct{})
	}
	// per-layer supply time and keys, for the progress lines
	var mu sync.Mutex
	layerSupply := make([]time.Duration, len(low.Layers))
	layerKeys := make([]int, len(low.Layers))
	var supply time.Duration
	var supplyErr error
	supDone := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(supDone)
		defer close(ch[0])
		defer close(ch[1])
		for _, st := range steps {
			if !cfg.Overlap {
				for b := 0; b < 2; b++ {
					select {
					case <-ready[b]:
					case <-ctx.Done():
						return
					}
				}
			}
			ts := time.Now()
			m, nk, err := sp.genStep(st, rep.Keys)
			d := time.Since(ts)
			mu.Lock()
			supply += d
			layerSupply[st.layer] += d
			layerKeys[st.layer] += nk
			if err != nil {
				supplyErr = fmt.Errorf("infer: offline, layer %d (%v): %w", st.layer, arch.Layers[st.layer].Kind, err)
			}
			mu.Unlock()
			if err != nil {
				cancel()
				return
			}
			if m[0].lin != nil {
				rep.Correlations++
				rep.CorrWords += len(m[0].lin.R) + len(m[0].lin.Z)
			}
			rep.MaterialStepBytes = max(rep.MaterialStepBytes, m[0].bytes(arch.Ring))
			for b := 0; b < 2; b++ {
				select {
				case ch[b] <- m[b]:
				case <-ctx.Done():
					m[b].wipe()
					if b == 0 {
						m[1].wipe()
					}
					return
				}
			}
		}
	}()
	lastLayerEnd := time.Now()
	doneLayer := func(i int) {
		if cfg.Progress == nil {
			return
		}
		l := &low.Layers[i]
		if !(l.Linear() || l.Kind == ReLU || l.Kind == Trunc || l.Kind == MaxPool || l.Kind == MaxPool2D) {
			return
		}
		now := time.Now()
		mu.Lock()
		sd, nk := layerSupply[i], layerKeys[i]
		mu.Unlock()
		wall := now.Sub(lastLayerEnd)
		lastLayerEnd = now
		on := wall
		if !cfg.Overlap {
			on -= sd
		}
		rate := ""
		if nk > 0 && sd > 0 {
			rate = fmt.Sprintf(", %s keys/s", si(float64(nk)/sd.Seconds()))
		}
		fmt.Fprintf(cfg.Progress, "layer %d/%d %-9s %9d values: supply %7.2f s (%d keys%s), online %7.2f s; elapsed %.1f s\n",
			i+1, len(low.Layers), l.Kind, shapes[i].Len(), sd.Seconds(), nk, rate, on.Seconds(), now.Sub(start).Seconds())
	}
	out, err := runParties(conns, func(b int) ([]int64, error) {
		next := func() (*stepMat, error) {
			if !cfg.Overlap {
				select {
				case ready[b] <- struct{}{}:
				case <-supDone: // every step supplied: ch is closed
				case <-ctx.Done():
					return nil, supplyOr(&mu, &supplyErr, ctx.Err())
				}
			}
			t0 := time.Now()
			defer func() { waited[b] += time.Since(t0) }()
			select {
			case s, ok := <-ch[b]:
				if !ok {
					return nil, supplyOr(&mu, &supplyErr, errors.New("key supply ended early"))
				}
				return s, nil
			case <-ctx.Done():
				return nil, supplyOr(&mu, &supplyErr, ctx.Err())
			}
		}
		var done func(int)
		if b == 1 {
			done = doneLayer
		}
		m, img := low, []int64(nil)
		if b == 1 {
			m, img = arch, image
		}
		o, err := evalStream(&gates.Party{B: b, Conn: conns[b]}, m, shapes, sess[b], next, img, done)
		if err != nil {
			cancel()
		}
		return o, err
	})
	cancel()
	<-supDone
	for b := 0; b < 2; b++ { // material left over after an error
		for s := range ch[b] {
			s.wipe()
		}
	}
	if err != nil {
		mu.Lock()
		if supplyErr != nil { // the root cause: a party only saw its peer go
			err = supplyErr
		}
		mu.Unlock()
		return nil, nil, err
	}
	wall := time.Since(start)
	rep.WallMs = ms2(wall)
	rep.SupplyMs = ms2(supply)
	rep.OnlineMs = rep.WallMs
	if !cfg.Overlap {
		rep.OnlineMs = ms2(wall - supply)
	} else {
		rep.KeyWaitMs = ms2(max(waited[0], waited[1]))
	}
	for _, v := range rep.Keys {
		rep.KeysTotal += v
	}
	rep.OnlineBytes = max(c0.Sent(), c1.Sent())
	rep.OnlineRounds = c0.Rounds()
	rep.PeakRSSBytes = PeakRSS()
	return out, rep, nil
}

// stepBytes is one party's material of step st, counted as
// stepMat.bytes counts it, before it is drawn.
func stepBytes(arch *Model, shapes []Shape, st step) int64 {
	l := &arch.Layers[st.layer]
	ring, n := arch.Ring, int64(st.hi-st.lo)
	switch {
	case l.Kind == FC || l.Kind == Conv:
		return int64(shapes[st.layer].Len()+outLen(l, shapes[st.layer])) * int64((ring+7)/8)
	case l.Kind == Trunc:
		return n * (keyMaterial(fss.Params{Type: fss.DCF, InBits: l.S + 1, OutBits: ring}) + keyMaterial(fss.Params{Type: fss.DCF, InBits: ring + 1, OutBits: l.S}))
	default:
		return 2 * n * keyMaterial(fss.Params{Type: fss.DCF, InBits: ring, OutBits: ring})
	}
}

// supplyOr returns the supplier's error when it failed, else err.
func supplyOr(mu *sync.Mutex, supplyErr *error, err error) error {
	mu.Lock()
	defer mu.Unlock()
	if *supplyErr != nil {
		return *supplyErr
	}
	return err
}

// bytes is one party's material of a step, counted as
// StreamInventory.MaterialBytes counts it.
func (s *stepMat) bytes(ring int) int64 {
	var n int64
	if s.lin != nil {
		n += int64(len(s.lin.R)+len(s.lin.Z)) * int64((ring+7)/8)
	}
	if s.relu != nil && len(s.relu.f) > 0 {
		n += int64(len(s.relu.f)) * (keyMaterial(s.relu.f[0].Params()) + keyMaterial(s.relu.g[0].Params()))
	}
	if s.trunc != nil && len(s.trunc.c) > 0 {
		n += int64(len(s.trunc.c)) * (keyMaterial(s.trunc.c[0].Params()) + keyMaterial(s.trunc.w[0].Params()))
	}
	return n
}

// PeakRSS is this process's peak resident set (VmHWM), or 0 where
// /proc is not there.
func PeakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// si formats a rate with a k/M suffix.
func si(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func ms2(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
