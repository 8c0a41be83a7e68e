// Package prg implements the kord-v1 pseudorandom generator: fixed-key
// AES-128 in Matyas–Meyer–Oseas mode over four public lane keys.
//
// MMO(K, s) = AES(K, s) XOR s. The API is batched from the start: every call
// hashes a slice of independent blocks, so a kernel can keep many AES
// operations in flight. Kernels (pure Go on crypto/aes, AES-NI, VAES on
// YMM, VAES on ZMM with AVX-512) are registered by name and chosen at
// start-up; all of them produce the same bytes.
package prg

import (
	"crypto/aes"
	"crypto/sha256"
	"encoding/binary"
	"sync"
)

// Block is one 16-byte AES block: a seed, or a PRG output.
type Block = [16]byte

// Lane names one of the four fixed-key lanes of kord-v1.
type Lane uint8

const (
	SeedLeft   Lane = iota // K_sL: left child seed and control bit
	SeedRight              // K_sR: right child seed and control bit
	ValueLeft              // K_vL: left value word (DCF)
	ValueRight             // K_vR: right value word (DCF)
	numLanes
)

// Labels are the ASCII labels whose SHA-256 prefix is each lane's AES key.
var labels = [numLanes]string{
	"kord/v1/prg/seed-left",
	"kord/v1/prg/seed-right",
	"kord/v1/prg/value-left",
	"kord/v1/prg/value-right",
}

func (l Lane) String() string {
	if l < numLanes {
		return labels[l]
	}
	return "invalid lane"
}

// LaneKey returns the public AES-128 key of lane l.
func LaneKey(l Lane) [16]byte {
	h := sha256.Sum256([]byte(labels[l]))
	var k [16]byte
	copy(k[:], h[:16])
	return k
}

// Schedule is an expanded AES-128 encryption key: 11 round keys.
type Schedule [11][16]byte

// laneRaw and laneSched hold each lane's raw key and expanded schedule,
// computed once. They are variable initializers, not an init function, so
// that other package-level variables (the kernels' paired schedules) can
// depend on them.
var (
	laneRaw = func() (r [numLanes][16]byte) {
		for l := Lane(0); l < numLanes; l++ {
			r[l] = LaneKey(l)
		}
		return
	}()
	laneSched = func() (s [numLanes]Schedule) {
		for l := Lane(0); l < numLanes; l++ {
			s[l] = ExpandKey(laneRaw[l])
		}
		return
	}()
)

// ExpandKey computes the AES-128 key schedule of k (FIPS-197 §5.2). The
// lane keys are public, so a table-based S-box is fine here.
func ExpandKey(k [16]byte) Schedule {
	var s Schedule
	var w [44]uint32
	for i := 0; i < 4; i++ {
		w[i] = binary.BigEndian.Uint32(k[4*i:])
	}
	rcon := uint32(1)
	for i := 4; i < 44; i++ {
		t := w[i-1]
		if i%4 == 0 {
			t = subWord(t<<8|t>>24) ^ rcon<<24
			rcon = uint32(xtime(byte(rcon)))
		}
		w[i] = w[i-4] ^ t
	}
	for r := 0; r < 11; r++ {
		for c := 0; c < 4; c++ {
			binary.BigEndian.PutUint32(s[r][4*c:], w[4*r+c])
		}
	}
	return s
}

func xtime(b byte) byte {
	if b&0x80 != 0 {
		return b<<1 ^ 0x1b
	}
	return b << 1
}

func subWord(w uint32) uint32 {
	return uint32(sbox[w>>24])<<24 | uint32(sbox[w>>16&0xff])<<16 |
		uint32(sbox[w>>8&0xff])<<8 | uint32(sbox[w&0xff])
}

// sbox is computed from its definition (inverse in GF(2^8), then the affine map).
var sbox = func() (s [256]byte) {
	p, q := byte(1), byte(1)
	for {
		p = p ^ p<<1 ^ ifb(p&0x80 != 0, 0x1b)
		q ^= q << 1
		q ^= q << 2
		q ^= q << 4
		if q&0x80 != 0 {
			q ^= 0x09
		}
		s[p] = q ^ rotl8(q, 1) ^ rotl8(q, 2) ^ rotl8(q, 3) ^ rotl8(q, 4) ^ 0x63
		if p == 1 {
			break
		}
	}
	s[0] = 0x63
	return
}()

func ifb(c bool, v byte) byte {
	if c {
		return v
	}
	return 0
}

func rotl8(x byte, n uint) byte { return x<<n | x>>(8-n) }

// Hash sets out[i] = MMO(K_l, in[i]) for every i. out and in must have the
// same length; out may be in itself, but must not overlap it otherwise.
func Hash(l Lane, out, in []Block) {
	checkLen(len(out), len(in))
	hash2(l, l, out, out, in)
}

// ExpandSeeds sets left[i] = MMO(K_sL, in[i]) and right[i] = MMO(K_sR, in[i]):
// the raw left and right children of each seed, control bit not yet split
// off. left or right may be in itself; no other overlap is allowed.
func ExpandSeeds(left, right, in []Block) {
	checkLen(len(left), len(in))
	checkLen(len(right), len(in))
	hash2(SeedLeft, SeedRight, left, right, in)
}

// ExpandValues is ExpandSeeds for the two value lanes (K_vL, K_vR).
func ExpandValues(left, right, in []Block) {
	checkLen(len(left), len(in))
	checkLen(len(right), len(in))
	hash2(ValueLeft, ValueRight, left, right, in)
}

// ExpandValuesFolded is ExpandValues on folded tree nodes: each input is
// hashed with bit 0 of byte 0 (its control bit) cleared, the input itself
// unchanged. left or right may not overlap in.
func ExpandValuesFolded(left, right, in []Block) {
	checkLen(len(left), len(in))
	checkLen(len(right), len(in))
	if archHash2F(active.id, ValueLeft, ValueRight, left, right, in) {
		return
	}
	const chunk = 128
	var x [chunk]Block
	for base := 0; base < len(in); base += chunk {
		m := min(chunk, len(in)-base)
		copy(x[:m], in[base:base+m])
		for i := range x[:m] {
			x[i][0] &^= 1
		}
		hash2(ValueLeft, ValueRight, left[base:base+m], right[base:base+m], x[:m])
	}
	clear(x[:])
}

// ExpandAll computes all four lanes of each seed at once, as a DCF level
// needs: sl, sr, vl, vr [i] = MMO(K_sL, K_sR, K_vL, K_vR; in[i]). One output
// may be in itself; no other overlap is allowed.
func ExpandAll(sl, sr, vl, vr, in []Block) {
	checkLen(len(sl), len(in))
	checkLen(len(sr), len(in))
	checkLen(len(vl), len(in))
	checkLen(len(vr), len(in))
	hash4(sl, sr, vl, vr, in)
}

// pairSchedule holds two schedules interleaved per round, 32 bytes a round.
type pairSchedule [11][32]byte

// ExpandTree expands tree nodes held in folded form, where bit 0 of byte 0
// of a node is its control bit t and the rest is its seed: for each parent
// in[i], out[2i] and out[2i+1] are its left and right children,
//
//	out[2i]   = MMO(K_sL, in[i] with bit 0 cleared) XOR (t ? cwL : 0)
//	out[2i+1] = MMO(K_sR, in[i] with bit 0 cleared) XOR (t ? cwR : 0)
//
// again folded: with cwL = sCW | tLCW and cwR = sCW | tRCW (the bit
// corrections in bit 0), a child's bit 0 is its corrected control bit. This
// is one DPF evaluation level of kord-v1 for a whole row of the tree. out
// must hold 2·len(in) blocks and must not overlap in.
func ExpandTree(out, in []Block, cwL, cwR *Block) {
	checkLen(len(out), 2*len(in))
	if archTree(active.id, out, in, cwL, cwR) {
		return
	}
	portableTree(out, in, cwL, cwR)
}

// ExpandTreeLeaves is ExpandTree for the last level of a DPF: instead of
// the children it writes their output words,
//
//	out[j] = ±(Convert_64(child_j) + (t_j ? final : 0)) mod 2^64, masked by mask
//
// for j = 2i, 2i+1, negated when negate is set (party 1). out must hold
// 2·len(in) words.
func ExpandTreeLeaves(out []uint64, in []Block, cwL, cwR *Block, final uint64, negate bool, mask uint64) {
	checkLen(len(out), 2*len(in))
	negb := uint64(0)
	if negate {
		negb = ^uint64(0)
	}
	if archLeaves(active.id, out, in, cwL, cwR, final, negb, mask) {
		return
	}
	const chunk = 64
	var kids [2 * chunk]Block
	for base := 0; base < len(in); base += chunk {
		m := min(chunk, len(in)-base)
		ExpandTree(kids[:2*m], in[base:base+m], cwL, cwR)
		for j := 0; j < 2*m; j++ {
			v := binary.LittleEndian.Uint64(kids[j][8:]) + final&-uint64(kids[j][0]&1)
			out[2*base+j] = ((v ^ negb) - negb) & mask
		}
	}
	clear(kids[:])
}

// HasDPFGenLevel reports whether the active kernel has a fused DPF Gen
// level; when it does not, DPFGenLevel must not be called.
func HasDPFGenLevel() bool { return archHasDPFGen(active.id) }

// DPFGenLevel runs one level of kord-v1 DPF Gen (spec §3, steps 1–4) for n
// = len(alpha) keys at once (n even), with the PRG, the Keep/Lose selection
// and the corrections fused in one kernel. Keys go in pairs: for keys 2q
// and 2q+1, quads[4q], quads[4q+1] are their party-0 chains and
// quads[4q+2], quads[4q+3] their party-1 chains, in folded form (bit 0 of
// byte 0 holds the chain's control bit); they are replaced by the next
// level's chains. The level's bit of α_i is bit `shift` of alpha[i]. Key
// i's sCW goes to out[i·stride+cwOff:][:16] and (tLCW | tRCW<<1) <<
// ctrlShift is ORed into out[i·stride+ctrlOff]. With roots set this is
// level 1: the chains are the root seeds, used as given (bit 0 included),
// with t0 = 0 and t1 = 1; the output chains are folded as usual. Later
// levels require what every DPF Gen path keeps: the two chains of a key
// carry different control bits (t0 XOR t1 = 1); the kernel relies on it.
func DPFGenLevel(quads []Block, alpha []uint64, shift uint, out []byte, stride, cwOff, ctrlOff int, ctrlShift uint, roots bool) {
	n := len(alpha)
	checkLen(len(quads), 2*n)
	if n%2 != 0 || (n > 0 && (stride < 0 || cwOff < 0 || ctrlOff < 0 || (n-1)*stride+max(cwOff+16, ctrlOff+1) > len(out) || shift > 63 || ctrlShift > 6)) {
		panic("prg: DPFGenLevel: odd key count or output layout out of range")
	}
	if !archDPFGen(active.id, quads, alpha, shift, out, stride, cwOff, ctrlOff, ctrlShift, roots) {
		panic("prg: DPFGenLevel without a fused kernel")
	}
}

// HasDCFValues reports whether the active kernel has a fused DCF value
// level for value fields of width bytes; when it does not, DCFValues must
// not be called.
func HasDCFValues(width int) bool { return archHasDCFValues(active.id, width) }

// DCFValues runs the value half of one level of kord-v1 DCF Gen (spec §4)
// for n = len(alpha) keys (n even) on the chains of DPFGenLevel, before
// DPFGenLevel replaces them; the chains are only read. Per key i, with a =
// bit `shift` of alpha[i], t1 its party-1 control bit (1 with roots set,
// where the chains are the root seeds as given) and Keep/Lose the value
// words (Convert_64) of its children under K_vL / K_vR chosen by a, it
// writes
//
//	VCW = ±(Lose1 - Lose0 - V + a·beta[i]) mod 2^n  (negated when t1 = 1)
//
// masked by mask, little-endian in width bytes at out[i·stride:], and sets
// v[i] += Keep0 - Keep1 + ±VCW (mod 2^64; callers mask at the end).
func DCFValues(quads []Block, alpha []uint64, shift uint, beta, v []uint64, out []byte, stride, width int, mask uint64, roots bool) {
	n := len(alpha)
	checkLen(len(quads), 2*n)
	if n%2 != 0 || len(beta) < n || len(v) < n || shift > 63 || (n > 0 && (stride < 0 || width < 1 || width > 8 || (n-1)*stride+width > len(out))) {
		panic("prg: DCFValues: odd key count or layout out of range")
	}
	if !archDCFValues(active.id, quads, alpha, shift, beta, v, out, stride, width, mask, roots) {
		panic("prg: DCFValues without a fused kernel")
	}
}

// portableTree is ExpandTree on the active kernel's two-lane hash, a chunk
// at a time.
func portableTree(out, in []Block, cwL, cwR *Block) {
	const chunk = 128
	var x, l, r [chunk]Block
	for base := 0; base < len(in); base += chunk {
		m := min(chunk, len(in)-base)
		for i := 0; i < m; i++ {
			x[i] = in[base+i]
			x[i][0] &^= 1
		}
		hash2(SeedLeft, SeedRight, l[:m], r[:m], x[:m])
		cwLlo, cwLhi := binary.LittleEndian.Uint64(cwL[:8]), binary.LittleEndian.Uint64(cwL[8:])
		cwRlo, cwRhi := binary.LittleEndian.Uint64(cwR[:8]), binary.LittleEndian.Uint64(cwR[8:])
		for i := 0; i < m; i++ {
			tm := -uint64(in[base+i][0] & 1)
			o := out[2*(base+i) : 2*(base+i)+2]
			binary.LittleEndian.PutUint64(o[0][:8], binary.LittleEndian.Uint64(l[i][:8])^cwLlo&tm)
			binary.LittleEndian.PutUint64(o[0][8:], binary.LittleEndian.Uint64(l[i][8:])^cwLhi&tm)
			binary.LittleEndian.PutUint64(o[1][:8], binary.LittleEndian.Uint64(r[i][:8])^cwRlo&tm)
			binary.LittleEndian.PutUint64(o[1][8:], binary.LittleEndian.Uint64(r[i][8:])^cwRhi&tm)
		}
	}
	clear(x[:])
}

// HashWith sets out[i] = AES(k, in[i]) XOR in[i] under an arbitrary
// expanded key, with the active kernel. It serves known-answer tests and
// raw kernel benchmarks; kord-v1 itself only uses the lane keys. out may be
// in itself, but must not overlap it otherwise.
func HashWith(k *Schedule, out, in []Block) {
	checkLen(len(out), len(in))
	raw(k, out, in)
}

func checkLen(a, b int) {
	if a != b {
		// A length mismatch is a bug in kord itself, never caller input.
		panic("prg: output and input lengths differ")
	}
}

// SplitControl clears the control bit (bit 0 of byte 0) of b and returns it.
func SplitControl(b *Block) byte {
	t := b[0] & 1
	b[0] &^= 1
	return t
}

// Convert returns bytes 8..15 of b as a little-endian integer, reduced mod 2^n
// (1 ≤ n ≤ 64). These bytes never hold a control bit.
func Convert(b *Block, n int) uint64 {
	return binary.LittleEndian.Uint64(b[8:]) & Mask(n)
}

// Mask returns 2^n - 1 for 1 ≤ n ≤ 64.
func Mask(n int) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(n) - 1
}

// genericHash2 is the portable kernel: crypto/aes one block per call.
// crypto/aes is reached through an interface, so whatever it is given
// escapes to the heap; the blocks therefore go through a pooled scratch
// block and the caller's buffers (often on its stack) never reach it. The
// input's words are read first, so any output may alias the input.
func genericHash2(la, lb Lane, a, b, in []Block) {
	ca, cb := ciphers[la], ciphers[lb]
	buf := scratchBlocks.Get().(*Block)
	for i := range in {
		lo := binary.LittleEndian.Uint64(in[i][:8])
		hi := binary.LittleEndian.Uint64(in[i][8:])
		a[i] = mmo(ca, buf, lo, hi)
		if la != lb {
			b[i] = mmo(cb, buf, lo, hi)
		}
	}
	*buf = Block{}
	scratchBlocks.Put(buf)
}

// scratchBlocks holds the generic kernel's scratch blocks.
var scratchBlocks = sync.Pool{New: func() any { return new(Block) }}

// mmo returns AES(c, x) XOR x for the block x = (lo, hi), computed in buf.
func mmo(c blockCipher, buf *Block, lo, hi uint64) Block {
	binary.LittleEndian.PutUint64(buf[:8], lo)
	binary.LittleEndian.PutUint64(buf[8:], hi)
	c.Encrypt(buf[:], buf[:])
	binary.LittleEndian.PutUint64(buf[:8], binary.LittleEndian.Uint64(buf[:8])^lo)
	binary.LittleEndian.PutUint64(buf[8:], binary.LittleEndian.Uint64(buf[8:])^hi)
	return *buf
}

// genericRaw is the portable kernel for an arbitrary schedule. It runs the
// rounds with aesRound, slowly: only tests and benchmarks use it.
func genericRaw(k *Schedule, out, in []Block) {
	for i := range in {
		x := in[i]
		s := x
		for j := range s {
			s[j] ^= k[0][j]
		}
		for r := 1; r <= 10; r++ {
			s = aesRound(s, &k[r], r == 10)
		}
		xorInto(&s, &x)
		out[i] = s
	}
}

// aesRound applies SubBytes, ShiftRows, MixColumns (unless last) and
// AddRoundKey to one state in FIPS-197 byte order (column-major).
func aesRound(s Block, k *Block, last bool) Block {
	var t Block
	for c := 0; c < 4; c++ {
		for r := 0; r < 4; r++ {
			t[4*c+r] = sbox[s[4*((c+r)%4)+r]]
		}
	}
	if !last {
		for c := 0; c < 4; c++ {
			a0, a1, a2, a3 := t[4*c], t[4*c+1], t[4*c+2], t[4*c+3]
			x := a0 ^ a1 ^ a2 ^ a3
			t[4*c] ^= x ^ xtime(a0^a1)
			t[4*c+1] ^= x ^ xtime(a1^a2)
			t[4*c+2] ^= x ^ xtime(a2^a3)
			t[4*c+3] ^= x ^ xtime(a3^a0)
		}
	}
	for j := range t {
		t[j] ^= k[j]
	}
	return t
}

// genericHash4 is the portable four-lane kernel.
func genericHash4(sl, sr, vl, vr, in []Block) {
	buf := scratchBlocks.Get().(*Block)
	for i := range in {
		lo := binary.LittleEndian.Uint64(in[i][:8])
		hi := binary.LittleEndian.Uint64(in[i][8:])
		sl[i] = mmo(ciphers[SeedLeft], buf, lo, hi)
		sr[i] = mmo(ciphers[SeedRight], buf, lo, hi)
		vl[i] = mmo(ciphers[ValueLeft], buf, lo, hi)
		vr[i] = mmo(ciphers[ValueRight], buf, lo, hi)
	}
	*buf = Block{}
	scratchBlocks.Put(buf)
}

func xorInto(dst, src *Block) {
	lo := binary.LittleEndian.Uint64(dst[:8]) ^ binary.LittleEndian.Uint64(src[:8])
	hi := binary.LittleEndian.Uint64(dst[8:]) ^ binary.LittleEndian.Uint64(src[8:])
	binary.LittleEndian.PutUint64(dst[:8], lo)
	binary.LittleEndian.PutUint64(dst[8:], hi)
}

type blockCipher interface{ Encrypt(dst, src []byte) }

var ciphers = func() (c [numLanes]blockCipher) {
	for l := Lane(0); l < numLanes; l++ {
		k := LaneKey(l)
		b, err := aes.NewCipher(k[:])
		if err != nil {
			panic(err) // a 16-byte key never fails
		}
		c[l] = b
	}
	return
}()

// HashPair sets a[i] = MMO(K_la, in[i]) and b[i] = MMO(K_lb, in[i]) for two
// distinct lanes, e.g. a seed lane and a value lane of the same side. a or b
// may be in itself; no other overlap is allowed.
func HashPair(la, lb Lane, a, b, in []Block) {
	checkLen(len(a), len(in))
	checkLen(len(b), len(in))
	hash2(la, lb, a, b, in)
}
