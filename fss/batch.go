package fss

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/kord-fss/kord/internal/prg"
)

// GroupKeys is how many keys a batch generator carries through the levels
// together. Each PRG call of a level then hashes 2·GroupKeys seeds (both
// parties' chains) under two lanes: 4·GroupKeys independent blocks, far
// more than the kernels need to keep their AES pipelines full, while the
// group's working set (about 10 KiB) stays in L1.
const GroupKeys = 64

// chunkGroups is how many groups a worker takes from the shared queue at a
// time: large enough that the queue is rarely touched, small enough that
// the last chunks spread over the workers.
const chunkGroups = 4

// BatchGen generates many keys of one shape at once, optionally on several
// goroutines. Its output is byte for byte what GenWithRoots and
// MarshalBinary give for the same (α, β, roots), written straight into the
// caller's buffers; its scratch is reused across calls, so steady-state
// generation allocates nothing per key.
//
// A BatchGen must not be used by two goroutines at once.
type BatchGen struct {
	p        Params
	workers  int
	inFlight int // keys per group
	scratch  []*groupState
	job      batchJob // the call in progress
}

// BatchOptions tunes a BatchGen. The zero value is the default.
type BatchOptions struct {
	// Workers is the number of goroutines (0 means GOMAXPROCS).
	Workers int
	// InFlight is how many keys one worker carries through the levels
	// together, a group (0 means GroupKeys). Each level of a group is one
	// kernel call over all its keys, so this is the number of independent
	// key chains a worker keeps in flight. The output does not depend on
	// it; only the speed does.
	InFlight int
}

// maxInFlight bounds BatchOptions.InFlight: a group's working state grows
// linearly with it and must stay cache resident to make sense.
const maxInFlight = 1 << 16

// NewBatchGen returns a generator for keys with params p tuned by o (the
// zero BatchOptions: GOMAXPROCS workers, GroupKeys keys in flight each).
func NewBatchGen(p Params, o BatchOptions) (*BatchGen, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	workers := o.Workers
	if workers < 0 {
		return nil, fmt.Errorf("fss: negative worker count %d", workers)
	}
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	m := o.InFlight
	if m < 0 || m > maxInFlight {
		return nil, fmt.Errorf("fss: keys in flight %d, want 0 (default) or 1..%d", m, maxInFlight)
	}
	if m == 0 {
		m = GroupKeys
	}
	g := &BatchGen{p: p, workers: workers, inFlight: m}
	for range workers {
		g.scratch = append(g.scratch, newGroupState(p, m))
	}
	return g, nil
}

// InFlight returns the number of keys each worker carries through the
// levels together.
func (g *BatchGen) InFlight() int { return g.inFlight }

// Params returns the shape of the keys g generates.
func (g *BatchGen) Params() Params { return g.p }

// Workers returns the number of goroutines g uses.
func (g *BatchGen) Workers() int { return g.workers }

// GenWithRoots generates len(alpha) key pairs: pair i shares (alpha[i],
// beta[i]) with root seeds root0[i], root1[i]. Key i of party b is written,
// serialized, to out_b[i·s : (i+1)·s] with s = Params().KeySize(); each out
// must hold exactly len(alpha)·s bytes. Nothing is written if an argument is
// invalid.
func (g *BatchGen) GenWithRoots(alpha, beta []uint64, root0, root1 []Block, out0, out1 []byte) error {
	ks := g.p.KeySize()
	if k := len(alpha); len(out0) != k*ks || len(out1) != k*ks {
		return fmt.Errorf("fss: batch of %d %v keys needs %d bytes per party, got %d and %d", k, g.p, k*ks, len(out0), len(out1))
	}
	return g.run(batchJob{alpha: alpha, beta: beta, root0: root0, root1: root1, out0: out0, out1: out1, ks: ks})
}

// GenPartyWithRoots is GenWithRoots for one party's keys only: key i of
// party b (0 or 1) is written to out[i·s : (i+1)·s]. The other party's
// keys are never written anywhere (a module keeps only its own share).
func (g *BatchGen) GenPartyWithRoots(b int, alpha, beta []uint64, root0, root1 []Block, out []byte) error {
	if b != 0 && b != 1 {
		return fmt.Errorf("fss: party %d, want 0 or 1", b)
	}
	ks := g.p.KeySize()
	if k := len(alpha); len(out) != k*ks {
		return fmt.Errorf("fss: batch of %d %v keys needs %d bytes, got %d", k, g.p, k*ks, len(out))
	}
	return g.run(batchJob{alpha: alpha, beta: beta, root0: root0, root1: root1, out0: out, ks: ks, only: b + 1})
}

// run checks a job's inputs and generates it.
func (g *BatchGen) run(job batchJob) error {
	alpha, beta := job.alpha, job.beta
	k := len(alpha)
	if len(beta) != k || len(job.root0) != k || len(job.root1) != k {
		return fmt.Errorf("fss: batch of %d alphas has %d betas, %d and %d roots", k, len(beta), len(job.root0), len(job.root1))
	}
	am, bm := prg.Mask(g.p.InBits), prg.Mask(g.p.OutBits)
	for i := range alpha {
		if alpha[i]&^am != 0 || beta[i]&^bm != 0 {
			return checkPoint(g.p, alpha[i], beta[i])
		}
	}
	g.job = job // in g, not on the stack: the workers share it
	defer func() { g.job = batchJob{} }()
	jp := &g.job
	gk := g.inFlight
	groups := (k + gk - 1) / gk
	// Smaller chunks when there are too few to keep every worker busy.
	cg := chunkGroups
	if groups < cg*g.workers {
		cg = max(1, groups/g.workers)
	}
	chunks := (groups + cg - 1) / cg
	w := min(g.workers, chunks)
	if w <= 1 {
		if k > 0 {
			g.scratch[0].runRange(jp, 0, k)
		}
		return nil
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	span := cg * gk // keys per chunk (a copy the goroutines capture)
	for i := range w {
		wg.Add(1)
		go func(st *groupState) {
			defer wg.Done()
			for {
				c := int(next.Add(1)) - 1
				if c >= chunks {
					return
				}
				lo := c * span
				st.runRange(jp, lo, min(k, lo+span))
			}
		}(g.scratch[i])
	}
	wg.Wait()
	return nil
}

// GenBatchWithRoots is a one-shot BatchGen on GOMAXPROCS goroutines that
// allocates the output: the concatenated serialized keys of each party.
func GenBatchWithRoots(p Params, alpha, beta []uint64, root0, root1 []Block) (out0, out1 []byte, err error) {
	g, err := NewBatchGen(p, BatchOptions{})
	if err != nil {
		return nil, nil, err
	}
	n := len(alpha) * p.KeySize()
	out0, out1 = make([]byte, n), make([]byte, n)
	if err := g.GenWithRoots(alpha, beta, root0, root1, out0, out1); err != nil {
		return nil, nil, err
	}
	return out0, out1, nil
}

// batchJob is one GenWithRoots call, shared read-only by the workers (each
// writes only its own keys' bytes).
type batchJob struct {
	alpha, beta  []uint64
	root0, root1 []prg.Block
	out0, out1   []byte // out1 unused when only is set
	ks           int
	only         int // 0: both parties; b+1: party b's keys only, in out0
}

// groupState is the structure-of-arrays working state of one group of keys
// across a level. Per key in flight it holds the two current seeds (32 B),
// two control bits and, for a DCF, the running value V (8 B); the rest is
// the PRG output of one level and the staging image of the group's party-0
// keys, fixed per-group scratch. Keys are assembled in the staging area
// (cache resident) and copied to the caller's buffers in one sequential
// pass per group, since the two parties' keys differ only in the party
// byte and the root seed.
type groupState struct {
	p                Params
	vb               int         // bytes per value field
	ks               int         // key size
	cwOff, ctrlOff   int         // offsets of sCW_1 and of the control bits in a key
	valOff, finalOff int         // offsets of VCW_1 (DCF) and of CW_last
	s                []prg.Block // s[i] party 0, s[G+i] party 1; L children in place
	r                []prg.Block // R children
	vl, vr           []prg.Block // value lanes (DCF)
	t                []uint8     // control bits, same layout as s
	v                []uint64    // DCF running value per key
	stage            []byte      // party-0 key images of the group
	alpha            []uint64    // the group's α, padded to an even count
	beta             []uint64    // the group's β, likewise (fused DCF)
	gk               int         // keys per group (keys in flight)
	fused            bool        // chains in the fused kernel's layout
}

// ci returns the index in s of party b's chain of key i.
func (st *groupState) ci(b, i int) int {
	if st.fused {
		return 4*(i>>1) + 2*b + i&1
	}
	return 2*i + b
}

func newGroupState(p Params, g int) *groupState {
	st := &groupState{
		p:       p,
		gk:      g,
		vb:      valueBytes(p.OutBits),
		ks:      p.KeySize(),
		cwOff:   headerSize + 16,
		ctrlOff: headerSize + 16 + 16*p.InBits,
		s:       make([]prg.Block, 2*g+2),
		r:       make([]prg.Block, 2*g+2),
		t:       make([]uint8, 2*g+2),
		alpha:   make([]uint64, g+1),
	}
	st.stage = make([]byte, (g+1)*st.ks)
	st.valOff = st.ctrlOff + (2*p.InBits+7)/8
	st.finalOff = st.valOff
	if p.Type == DCF {
		st.finalOff += p.InBits * st.vb
		st.vl = make([]prg.Block, 2*g+2)
		st.vr = make([]prg.Block, 2*g+2)
		st.v = make([]uint64, g+1)
		st.beta = make([]uint64, g+1)
	}
	return st
}

// runRange generates keys [lo, hi) of the job, a group at a time.
func (st *groupState) runRange(job *batchJob, lo, hi int) {
	for base := lo; base < hi; base += st.gk {
		st.runGroup(job, base, min(st.gk, hi-base))
	}
}

// runGroup generates keys [base, base+n), n ≤ st.gk, level by level:
// each level hashes all 2n seeds of the group in one kernel call per lane
// pair, then applies the per-key Gen step of the spec to every key.
func (st *groupState) runGroup(job *batchJob, base, n int) {
	p := st.p
	l := p.InBits
	mask := prg.Mask(p.OutBits)
	dcf := p.Type == DCF
	ks := st.ks
	nc := (2*l + 7) / 8
	// With a fused DPF level kernel every level runs in it, on folded
	// chains (control bit in bit 0 of the seed) from level 2 on, two keys
	// per register: the kernel wants an even count, so an odd group gets a
	// dummy key (α = 0, zero roots) whose output lands in spare staging.
	// A DCF runs its seed part there too, its value half just before it in
	// prg.DCFValues (value fields of 1, 2, 4 or 8 bytes) or, for other
	// widths, in dcfValues here.
	fused := prg.HasDPFGenLevel()
	m := n
	if fused && n%2 == 1 {
		m = n + 1
	}
	// All 2m chains go to one kernel call. Without the fused kernel key i's
	// chains are s[2i] (party 0) and s[2i+1] (party 1); with it, keys pair
	// up as [0: 2q, 2q+1 | 1: 2q, 2q+1] (see prg.DPFGenLevel).
	seeds, rs, ts := st.s[:2*m], st.r[:2*m], st.t[:2*m]
	// Keys are assembled straight in party 0's output, then copied to party
	// 1's, except for an odd group on the fused path, whose dummy key needs
	// room past the group: it is assembled in the staging area.
	direct := m == n
	var stage []byte
	if direct {
		// Not cleared first: every byte of a key is written below (the
		// header and root, each level's correction words and value
		// fields, the control bytes, cleared with the header and then
		// or-ed into, and CW_last), so whatever the buffer held is
		// overwritten (TestBatchGenOverwritesOutput). A clear here was a
		// second pass over bytes a module's recycled slab had just been
		// wiped in (msg.Slab.Wipe), 7-9% of a module's CPU.
		stage = job.out0[base*ks : (base+n)*ks]
	} else {
		stage = st.stage[:m*ks]
	}
	st.fused = fused
	if fused {
		copy(st.alpha, job.alpha[base:base+n])
		st.alpha[n] = 0
		if dcf {
			copy(st.beta, job.beta[base:base+n])
			st.beta[n] = 0
			st.v[n] = 0
		}
		seeds[st.ci(0, m-1)], seeds[st.ci(1, m-1)] = prg.Block{}, prg.Block{}
	}
	// Headers and roots; seeds and control bits start as the spec says.
	for i := 0; i < n; i++ {
		k := base + i
		img := stage[i*ks : (i+1)*ks]
		img[0], img[1], img[2], img[3], img[4], img[5] = magic, version, byte(p.Type), 0, byte(l), byte(p.OutBits)
		copy(img[headerSize:], job.root0[k][:])
		clear(img[st.ctrlOff : st.ctrlOff+nc])
		seeds[st.ci(0, i)], seeds[st.ci(1, i)] = job.root0[k], job.root1[k]
		ts[2*i], ts[2*i+1] = 0, 1
		if dcf {
			st.v[i] = 0
		}
	}
	for j := 1; j <= l; j++ {
		sh := uint(l - j)
		if fused {
			if dcf && prg.HasDCFValues(st.vb) {
				prg.DCFValues(seeds, st.alpha[:m], sh, st.beta[:m], st.v[:m], stage[st.valOff+(j-1)*st.vb:],
					ks, st.vb, mask, j == 1)
			} else if dcf {
				st.dcfValues(job, base, n, j, seeds, stage)
			}
			prg.DPFGenLevel(seeds, st.alpha[:m], sh, stage, ks,
				st.cwOff+16*(j-1), st.ctrlOff+(j-1)/4, uint(2*((j-1)%4)), j == 1)
			continue
		}
		if dcf {
			prg.ExpandValues(st.vl[:2*n], st.vr[:2*n], seeds)
		}
		prg.ExpandSeeds(seeds, rs, seeds)
		cw := st.cwOff + 16*(j-1)
		cb, cbit := st.ctrlOff+(j-1)/4, uint(2*((j-1)%4))
		vo := st.valOff + (j-1)*st.vb
		for i := 0; i < n; i++ {
			a := uint8(job.alpha[base+i]>>sh) & 1
			am := -uint64(a)
			L0, L1 := &seeds[2*i], &seeds[2*i+1]
			R0, R1 := &rs[2*i], &rs[2*i+1]
			l0lo, l0hi := binary.LittleEndian.Uint64(L0[:8]), binary.LittleEndian.Uint64(L0[8:])
			l1lo, l1hi := binary.LittleEndian.Uint64(L1[:8]), binary.LittleEndian.Uint64(L1[8:])
			r0lo, r0hi := binary.LittleEndian.Uint64(R0[:8]), binary.LittleEndian.Uint64(R0[8:])
			r1lo, r1hi := binary.LittleEndian.Uint64(R1[:8]), binary.LittleEndian.Uint64(R1[8:])
			tl0, tl1 := uint8(l0lo&1), uint8(l1lo&1)
			tr0, tr1 := uint8(r0lo&1), uint8(r1lo&1)
			// Keep = L, Lose = R when a = 0, swapped when a = 1 (branch-free).
			d0lo, d0hi := (l0lo^r0lo)&am, (l0hi^r0hi)&am
			d1lo, d1hi := (l1lo^r1lo)&am, (l1hi^r1hi)&am
			cwlo := (r0lo ^ d0lo ^ r1lo ^ d1lo) &^ 1
			cwhi := r0hi ^ d0hi ^ r1hi ^ d1hi
			tLCW := tl0 ^ tl1 ^ a ^ 1
			tRCW := tr0 ^ tr1 ^ a
			tKeepCW := tLCW ^ (tLCW^tRCW)&a
			tk0 := tl0 ^ (tl0^tr0)&a
			tk1 := tl1 ^ (tl1^tr1)&a
			t0, t1 := ts[2*i], ts[2*i+1]
			m0, m1 := -uint64(t0), -uint64(t1)
			binary.LittleEndian.PutUint64(L0[:8], (l0lo^d0lo)&^1^cwlo&m0)
			binary.LittleEndian.PutUint64(L0[8:], l0hi^d0hi^cwhi&m0)
			binary.LittleEndian.PutUint64(L1[:8], (l1lo^d1lo)&^1^cwlo&m1)
			binary.LittleEndian.PutUint64(L1[8:], l1hi^d1hi^cwhi&m1)
			ts[2*i] = tk0 ^ t0&tKeepCW
			ts[2*i+1] = tk1 ^ t1&tKeepCW
			img := stage[i*ks : (i+1)*ks]
			binary.LittleEndian.PutUint64(img[cw:cw+8], cwlo)
			binary.LittleEndian.PutUint64(img[cw+8:cw+16], cwhi)
			img[cb] |= (tLCW | tRCW<<1) << cbit
			if dcf {
				v0L := binary.LittleEndian.Uint64(st.vl[2*i][8:])
				v1L := binary.LittleEndian.Uint64(st.vl[2*i+1][8:])
				v0R := binary.LittleEndian.Uint64(st.vr[2*i][8:])
				v1R := binary.LittleEndian.Uint64(st.vr[2*i+1][8:])
				V := st.v[i]
				// Lose = R when a = 0 (no β term), L when a = 1; branch-free.
				lose0, lose1 := v0R^(v0L^v0R)&am, v1R^(v1L^v1R)&am
				keep0, keep1 := v0L^(v0L^v0R)&am, v1L^(v1L^v1R)&am
				vcw := neg(t1, lose1-lose0-V+job.beta[base+i]&am, mask)
				st.v[i] = V - keep1 + keep0 + neg(t1, vcw, mask)
				putValue(img[vo:vo+st.vb], vcw)
			}
		}
	}
	for i := 0; i < n; i++ {
		img := stage[i*ks : (i+1)*ks]
		c0 := prg.Convert(&seeds[st.ci(0, i)], p.OutBits)
		c1 := prg.Convert(&seeds[st.ci(1, i)], p.OutBits)
		t1 := ts[2*i+1]
		if fused {
			t1 = seeds[st.ci(1, i)][0] & 1
		}
		var final uint64
		if dcf {
			final = neg(t1, c1-c0-st.v[i], mask)
		} else {
			final = neg(t1, job.beta[base+i]-c0+c1, mask)
		}
		putValue(img[st.finalOff:st.finalOff+st.vb], final)
	}
	o0 := job.out0[base*ks : (base+n)*ks]
	if !direct {
		copy(o0, stage[:n*ks])
		clear(stage)
	}
	// The parties' keys differ only in the party byte and the root seed:
	// party 1's are party 0's patched, in their own buffer or in place.
	o1 := o0
	switch job.only {
	case 0:
		o1 = job.out1[base*ks : (base+n)*ks]
		copy(o1, o0)
	case 1:
		o1 = nil
	}
	for i := 0; i < len(o1)/ks; i++ {
		o1[i*ks+3] = 1
		copy(o1[i*ks+headerSize:i*ks+headerSize+16], job.root1[base+i][:])
	}
	clear(st.s)
	clear(st.r)
	clear(st.vl)
	clear(st.vr)
	clear(st.alpha)
	clear(st.beta)
	clear(st.t)
	clear(st.v)
}

// dcfValues is the value half of DCF Gen level j for the fused path,
// applied before the seed half replaces the chains: it hashes the current
// chains under the value lanes (level 1: the roots as given; later: folded
// chains with their control bit masked off), then computes VCW_j and the
// running value V of each key (spec §4) with t1 the party-1 bit before the
// level.
func (st *groupState) dcfValues(job *batchJob, base, n, j int, seeds []prg.Block, stage []byte) {
	vl, vr := st.vl[:len(seeds)], st.vr[:len(seeds)]
	if j == 1 {
		prg.ExpandValues(vl, vr, seeds)
	} else {
		prg.ExpandValuesFolded(vl, vr, seeds)
	}
	mask := prg.Mask(st.p.OutBits)
	sh := uint(st.p.InBits - j)
	ks, vb := st.ks, st.vb
	vo := st.valOff + (j-1)*vb
	alpha, beta, v := job.alpha[base:base+n], job.beta[base:base+n], st.v[:n]
	// t1 before level 1 is 1; later it is bit 0 of the folded chain.
	t1All := uint64(0)
	if j == 1 {
		t1All = 1
	}
	// The fused layout (see prg.DPFGenLevel): key i's party-0 chain at
	// 4(i/2) + i%2, its party-1 chain two blocks later.
	for i := range n {
		c0 := 4*(i>>1) + i&1
		c1 := c0 + 2
		if c1 >= len(seeds) {
			break // never: seeds holds every key's chains
		}
		am := -(alpha[i] >> sh & 1)
		t1 := t1All | uint64(seeds[c1][0]&1)&^-t1All
		v0L := binary.LittleEndian.Uint64(vl[c0][8:])
		v1L := binary.LittleEndian.Uint64(vl[c1][8:])
		v0R := binary.LittleEndian.Uint64(vr[c0][8:])
		v1R := binary.LittleEndian.Uint64(vr[c1][8:])
		d0, d1 := (v0L^v0R)&am, (v1L^v1R)&am
		// Lose = R when a = 0 (no β term), L when a = 1; Keep the other.
		x := v1R ^ d1 - (v0R ^ d0) - v[i] + beta[i]&am
		tm := -t1
		vcw := (x ^ tm + t1) & mask
		v[i] += v0L ^ d0 - (v1L ^ d1) + (vcw^tm+t1)&mask
		o := i*ks + vo
		switch vb {
		case 4:
			binary.LittleEndian.PutUint32(stage[o:o+4], uint32(vcw))
		case 8:
			binary.LittleEndian.PutUint64(stage[o:o+8], vcw)
		default:
			putValue(stage[o:o+vb], vcw)
		}
	}
}

// putValue writes v little-endian into b (len(b) ≤ 8 bytes).
func putValue(b []byte, v uint64) {
	switch len(b) {
	case 8:
		binary.LittleEndian.PutUint64(b, v)
		return
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
		return
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
		return
	}
	for i := range b {
		b[i] = byte(v >> (8 * uint(i)))
	}
}

// BlocksPerGenKey returns the MMO blocks one key pair of shape p costs to
// generate: 4 per level for a DPF (two chains × L, R), 8 for a DCF.
func BlocksPerGenKey(p Params) int {
	if p.Type == DCF {
		return 8 * p.InBits
	}
	return 4 * p.InBits
}
