package fabric

import (
	"errors"
	"fmt"
	"math"
)

// Kind is the kind of key a request asks for.
type Kind uint8

const (
	// DPF is a distributed point function key: 4 AES calls per level.
	DPF Kind = iota
	// DCF is a distributed comparison function key: 8 AES calls per level.
	DCF
)

// String returns "dpf" or "dcf".
func (k Kind) String() string {
	switch k {
	case DPF:
		return "dpf"
	case DCF:
		return "dcf"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Fabric defaults, as in KORD's RTL.
const (
	DefaultPipeline   = 11 // AES-MMO pipeline stages per lane
	DefaultTurnaround = 1  // scheduler turnaround after a level returns
	DefaultAdmit      = 1  // cycles from a key's admission to its first issue
	DefaultLevels     = 32 // ℓ: levels per key (domain bits)
	CallsPerDPFLevel  = 4  // AES calls per DPF level
	CallsPerDCFLevel  = 8  // AES calls per DCF level
)

// Config describes one fabric.
type Config struct {
	W          int // AES lanes (each accepts one call per cycle)
	M          int // key slots (keys in flight)
	Pipeline   int // pipeline stages per lane
	Turnaround int // cycles between a level's last result and the slot's next grant
	Admit      int // cycles between a key's admission and its first possible issue
	Levels     int // ℓ: levels per key
	CallsDPF   int // AES calls issued per DPF level; 0: the engine rejects DPF
	CallsDCF   int // AES calls issued per DCF level; 0: the engine rejects DCF

	// Trace, when set, is called for every grant in issue order.
	Trace func(Grant)
}

// Leff is the effective latency: a slot granted at cycle t may be granted
// again at t + Leff (for a level that fits the lanes in one cycle).
func (c Config) Leff() int { return c.Pipeline + c.Turnaround }

// NewConfig is a fabric with W lanes, M slots and the defaults: 11-stage
// pipeline, 1 cycle of turnaround (Leff = 12), 1 admission cycle, 32 levels,
// 4 calls per DPF level and 8 per DCF level.
func NewConfig(w, m int) Config {
	return Config{
		W: w, M: m,
		Pipeline: DefaultPipeline, Turnaround: DefaultTurnaround, Admit: DefaultAdmit,
		Levels:   DefaultLevels,
		CallsDPF: CallsPerDPFLevel, CallsDCF: CallsPerDCFLevel,
	}
}

// DPFEngine is KORD's DPF fabric with W lanes and M slots (DCF levels, if
// any, take 8 calls).
func DPFEngine(w, m int) Config { return NewConfig(w, m) }

// DPFOnlyW8 is KORD's DPF-only engine: W = 8 lanes that retire two 4-call
// DPF levels per cycle as two 4-lane groups. It rejects DCF requests.
func DPFOnlyW8(m int) Config {
	c := NewConfig(8, m)
	c.CallsDCF = 0
	return c
}

// UnifiedW8 is KORD's unified DPF/DCF engine: W = 8 lanes; a DCF level is 8
// calls and a DPF level is issued through the same 8-call datapath, so
// either kind occupies all eight lanes for one cycle.
func UnifiedW8(m int) Config {
	c := NewConfig(8, m)
	c.CallsDPF = CallsPerDCFLevel
	return c
}

// calls returns the AES calls one level of kind k issues, or 0.
func (c Config) calls(k Kind) int {
	switch k {
	case DPF:
		return c.CallsDPF
	case DCF:
		return c.CallsDCF
	}
	return 0
}

// Validate reports whether the configuration can be simulated.
func (c Config) Validate() error {
	switch {
	case c.W < 1 || c.W > 1<<16:
		return fmt.Errorf("fabric: W = %d lanes, want 1..65536", c.W)
	case c.M < 1 || c.M > 1<<20:
		return fmt.Errorf("fabric: M = %d slots, want 1..1048576", c.M)
	case c.Pipeline < 1 || c.Pipeline > 1<<16:
		return fmt.Errorf("fabric: pipeline depth %d, want 1..65536", c.Pipeline)
	case c.Turnaround < 0 || c.Turnaround > 1<<16:
		return fmt.Errorf("fabric: turnaround %d, want 0..65536", c.Turnaround)
	case c.Admit < 0 || c.Admit > 1<<16:
		return fmt.Errorf("fabric: admission latency %d, want 0..65536", c.Admit)
	case c.Levels < 1 || c.Levels > 1<<10:
		return fmt.Errorf("fabric: %d levels per key, want 1..1024", c.Levels)
	case c.CallsDPF == 0 && c.CallsDCF == 0:
		return errors.New("fabric: engine supports neither DPF nor DCF")
	}
	for _, k := range []Kind{DPF, DCF} {
		n := c.calls(k)
		if n == 0 {
			continue
		}
		if n < 0 || (n%c.W != 0 && c.W%n != 0) {
			return fmt.Errorf("fabric: %v level of %d calls on %d lanes: calls must divide or be a multiple of W", k, n, c.W)
		}
	}
	return nil
}

// Grant is one scheduler decision: slot Slot issues level Level of key Key.
type Grant struct {
	Cycle   int64 // cycle of the grant (the level's first calls enter the lanes)
	ReadyAt int64 // cycle from which the slot had been waiting
	Slot    int
	Key     int // position of the key in the request stream
	Kind    Kind
	Level   int // 0-based level within the key
}

// Result is what one simulation measured.
type Result struct {
	Cycles      int64   // cycles from the first admission to the last retirement, inclusive
	Keys        int     // keys generated
	KeysDPF     int     // of which DPF
	KeysDCF     int     // of which DCF
	Levels      int64   // levels issued
	Calls       int64   // AES calls issued (lane-cycles occupied)
	UsefulCalls int64   // calls the key's own level needs (4 for DPF, 8 for DCF)
	Utilization float64 // Calls / (W·Cycles)
	W           int
}

// KeysPerCycle is the average key throughput over the run.
func (r Result) KeysPerCycle() float64 {
	if r.Cycles == 0 {
		return 0
	}
	return float64(r.Keys) / float64(r.Cycles)
}

// KeysPerSecond is the throughput at clock fmax (Hz).
func (r Result) KeysPerSecond(fmaxHz float64) float64 { return r.KeysPerCycle() * fmaxHz }

// UsefulUtilization is the fraction of lane-cycles spent on calls the keys
// need (it differs from Utilization only when DPF levels are padded).
func (r Result) UsefulUtilization() float64 {
	if r.Cycles == 0 {
		return 0
	}
	return float64(r.UsefulCalls) / (float64(r.W) * float64(r.Cycles))
}

// UniformStream is a request stream of n keys of one kind.
func UniformStream(k Kind, n int) []Kind {
	s := make([]Kind, n)
	for i := range s {
		s[i] = k
	}
	return s
}

// MixedStream is a request stream of n keys in which a fraction dcf of the
// keys are DCF, spread evenly (key i is DCF when ⌊(i+1)·dcf⌋ > ⌊i·dcf⌋).
func MixedStream(n int, dcf float64) ([]Kind, error) {
	if n < 0 {
		return nil, fmt.Errorf("fabric: stream of %d keys", n)
	}
	if !(dcf >= 0 && dcf <= 1) {
		return nil, fmt.Errorf("fabric: DCF fraction %v, want 0..1", dcf)
	}
	s := make([]Kind, n)
	for i := range s {
		if math.Floor(float64(i+1)*dcf) > math.Floor(float64(i)*dcf) {
			s[i] = DCF
		}
	}
	return s, nil
}

// event is a slot waiting for a cycle: to become ready, or to retire.
type event struct {
	at   int64 // cycle
	seq  int32 // key position in the stream (FCFS tie-break: older first)
	slot int32
}

func (a event) less(b event) bool { return a.at < b.at || (a.at == b.at && a.seq < b.seq) }

// eventHeap is a binary min-heap ordered by (at, seq).
type eventHeap []event

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s[r].less(s[l]) {
			m = r
		}
		if !s[m].less(s[i]) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// maxStream bounds a stream so that key positions fit the event record.
const maxStream = math.MaxInt32

// Simulate runs the fabric cycle by cycle over the request stream and
// reports what it measured. Cycle 0 admits the first min(M, len(stream))
// keys; the run ends with the cycle in which the last key retires.
//
// Timing of one slot: a key admitted at cycle a may be granted from
// a+Admit; a level granted at t occupies the lanes for max(1, c/W) cycles
// and the slot may be granted again Leff cycles after its last calls
// entered the lanes; a key whose last level was granted at t retires at
// t+Leff (+ the extra issue cycles), and in that same cycle the slot admits
// the next key of the stream.
//
// The scheduler is strictly first-come-first-served: each cycle it grants
// ready slots in order of the cycle from which they have been waiting (ties:
// older key first) while the oldest one's level fits the lanes left.
func Simulate(cfg Config, stream []Kind) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if len(stream) > maxStream {
		return Result{}, fmt.Errorf("fabric: stream of %d keys, at most %d", len(stream), maxStream)
	}
	for i, k := range stream {
		if cfg.calls(k) <= 0 {
			return Result{}, fmt.Errorf("fabric: key %d is %v, which this engine does not generate", i, k)
		}
	}
	res := Result{W: cfg.W}
	if len(stream) == 0 {
		return res, nil
	}

	var (
		w     = int64(cfg.W)
		leff  = int64(cfg.Leff())
		admit = int64(cfg.Admit)
		kind  = make([]Kind, cfg.M)
		left  = make([]int32, cfg.M) // levels still to issue
		key   = make([]int32, cfg.M)
		next  int            // next key of the stream to admit
		wait  eventHeap      // slots whose next grant or retirement is in the future
		ready eventHeap      // slots waiting for a grant, FCFS order
		busy  int64     = -1 // last cycle whose lanes a multi-cycle level holds
		last  int64          // cycle of the last retirement
		t     int64          // current cycle
		trace = cfg.Trace
	)
	wait = make(eventHeap, 0, cfg.M)
	ready = make(eventHeap, 0, cfg.M)

	// admitInto puts the next key of the stream into slot s at cycle now.
	admitInto := func(s int32, now int64) {
		k := stream[next]
		kind[s], left[s], key[s] = k, int32(cfg.Levels), int32(next)
		e := event{at: now + admit, seq: int32(next), slot: s}
		next++
		if e.at <= now {
			ready.push(e)
		} else {
			wait.push(e)
		}
	}
	for s := 0; s < cfg.M && next < len(stream); s++ {
		admitInto(int32(s), 0)
	}

	for len(wait) > 0 || len(ready) > 0 {
		// Slots whose wait ends this cycle: retire finished keys (and
		// refill their slots), queue the others for a grant.
		for len(wait) > 0 && wait[0].at <= t {
			e := wait.pop()
			if left[e.slot] > 0 {
				ready.push(e)
				continue
			}
			res.Keys++
			if kind[e.slot] == DPF {
				res.KeysDPF++
			} else {
				res.KeysDCF++
			}
			last = t
			if next < len(stream) {
				admitInto(e.slot, t)
			}
		}

		// Grant in FCFS order while the oldest ready level fits.
		lanes := w
		if t <= busy {
			lanes = 0
		}
		for len(ready) > 0 && lanes > 0 {
			e := ready[0]
			c := int64(cfg.calls(kind[e.slot]))
			span := int64(1)
			if c > w {
				if lanes < w {
					break
				}
				span = c / w
				busy = t + span - 1
				lanes = 0
			} else {
				if c > lanes {
					break
				}
				lanes -= c
			}
			ready.pop()
			lvl := int32(cfg.Levels) - left[e.slot]
			left[e.slot]--
			res.Levels++
			res.Calls += c
			if kind[e.slot] == DPF {
				res.UsefulCalls += min(c, CallsPerDPFLevel)
			} else {
				res.UsefulCalls += min(c, CallsPerDCFLevel)
			}
			if trace != nil {
				trace(Grant{Cycle: t, ReadyAt: e.at, Slot: int(e.slot), Key: int(key[e.slot]), Kind: kind[e.slot], Level: int(lvl)})
			}
			wait.push(event{at: t + span - 1 + leff, seq: e.seq, slot: e.slot})
		}

		// Next cycle in which something can happen.
		nt := int64(math.MaxInt64)
		if len(wait) > 0 {
			nt = wait[0].at
		}
		if len(ready) > 0 {
			nt = min(nt, max(t+1, busy+1))
		}
		if nt == math.MaxInt64 {
			break
		}
		t = max(nt, t+1)
	}
	res.Cycles = last + 1
	res.Utilization = float64(res.Calls) / (float64(cfg.W) * float64(res.Cycles))
	return res, nil
}
