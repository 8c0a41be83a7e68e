package fss

import (
	"errors"
	"fmt"
	"io"

	"github.com/kord-fss/kord/internal/prg"
)

// XorDPF is kord-v1 key type 0x03: a DPF over {0,1}^ℓ with one-bit outputs
// shared by XOR, with early termination. The last ν = min(ℓ, 7) levels of
// the tree are folded into one 128-bit leaf word, so one AES call yields the
// shares of 2^ν points. It is the key PIR and Floram-style ORAM use: the
// XOR of the two parties' EvalAll outputs is the bit vector e_α (times β).
// The layout and PRG use are in docs/keyformat.md, "Type 0x03".
const XorDPF Type = 0x03

// XorLeafBits is ν for ℓ ≥ 7: a leaf word holds 2^7 = 128 output bits.
const XorLeafBits = 7

// Errors returned by XorKey.UnmarshalBinary besides the shared ones (ErrMagic,
// ErrVersion, ErrParty, ErrInBits, ErrLength, ErrControlBits).
var (
	ErrXorType    = errors.New("fss: key type is not xor-dpf (0x03)")
	ErrXorOutBits = errors.New("fss: a type 0x03 key has output width n = 1")
)

// XorKey is one party's share of a type-0x03 key. It is obtained only from
// GenXor, GenXorWithRoots or UnmarshalBinary, so it is always well formed.
type XorKey struct {
	party  uint8
	inBits int         // ℓ, 1..64
	root   prg.Block   // root seed of this party
	seedCW []prg.Block // sCW_1..sCW_d, d = ℓ - ν
	tL, tR uint64      // bit j-1 holds tLCW_j / tRCW_j
	leafCW prg.Block   // CW_leaf: 128-bit correction of the leaf word
}

// xorNu returns ν = min(ℓ, 7), the number of folded levels.
func xorNu(inBits int) int { return min(inBits, XorLeafBits) }

// XorKeySize returns the serialized length of a type-0x03 key with input
// width ℓ: 6 + 16 + 16d + ⌈2d/8⌉ + 16 with d = ℓ - min(ℓ, 7).
func XorKeySize(inBits int) int {
	d := inBits - xorNu(inBits)
	return headerSize + 16 + 16*d + (2*d+7)/8 + 16
}

// Party returns 0 or 1.
func (k *XorKey) Party() int { return int(k.party) }

// InBits returns ℓ, the input width.
func (k *XorKey) InBits() int { return k.inBits }

// Depth returns d = ℓ - ν, the number of tree levels above the leaf words.
func (k *XorKey) Depth() int { return len(k.seedCW) }

// LeafBits returns ν: each leaf word carries the outputs of 2^ν points.
func (k *XorKey) LeafBits() int { return xorNu(k.inBits) }

// Leaves returns 2^d, the number of 128-bit leaf words EvalAll produces.
func (k *XorKey) Leaves() uint64 { return 1 << uint(len(k.seedCW)) }

// Equal reports whether two keys are the same key share.
func (k *XorKey) Equal(o *XorKey) bool {
	if k.party != o.party || k.inBits != o.inBits || k.root != o.root ||
		k.tL != o.tL || k.tR != o.tR || k.leafCW != o.leafCW {
		return false
	}
	for i := range k.seedCW {
		if k.seedCW[i] != o.seedCW[i] {
			return false
		}
	}
	return true
}

// Wipe overwrites the key's secret material with zeros.
func (k *XorKey) Wipe() {
	k.root = prg.Block{}
	clear(k.seedCW)
	k.tL, k.tR, k.leafCW = 0, 0, prg.Block{}
}

// GenXor generates a type-0x03 key pair for f(x) = β·[x = α] over {0,1}^ℓ
// with fresh root seeds from rnd (crypto/rand when rnd is nil).
func GenXor(rnd io.Reader, inBits int, alpha uint64, beta uint8) (k0, k1 *XorKey, err error) {
	r0, r1, err := freshRoots(rnd)
	if err != nil {
		return nil, nil, err
	}
	return GenXorWithRoots(inBits, alpha, beta, r0, r1)
}

// GenXorWithRoots is GenXor with the root seeds given (used exactly as
// given); the same inputs always give the same bytes.
func GenXorWithRoots(inBits int, alpha uint64, beta uint8, root0, root1 [16]byte) (k0, k1 *XorKey, err error) {
	if inBits < 1 || inBits > 64 {
		return nil, nil, fmt.Errorf("%w: %d", ErrInBits, inBits)
	}
	if alpha&^prg.Mask(inBits) != 0 {
		return nil, nil, fmt.Errorf("fss: alpha %d does not fit in %d input bits", alpha, inBits)
	}
	if beta > 1 {
		return nil, nil, fmt.Errorf("fss: beta %d is not a bit", beta)
	}
	nu := xorNu(inBits)
	d := inBits - nu
	k0 = &XorKey{party: 0, inBits: inBits, root: root0, seedCW: make([]prg.Block, d)}
	var s, l, r, keep, lose [2]prg.Block
	s = [2]prg.Block{root0, root1}
	t := [2]uint8{0, 1}
	for j := 1; j <= d; j++ {
		a := uint8(alpha >> uint(inBits-j) & 1)
		prg.ExpandSeeds(l[:], r[:], s[:])
		var tl, tr [2]uint8
		for b := 0; b < 2; b++ {
			tl[b] = prg.SplitControl(&l[b])
			tr[b] = prg.SplitControl(&r[b])
		}
		// Masks, not branches, on α and the control bits (see order).
		var tKeep [2]uint8
		for b := 0; b < 2; b++ {
			order(a, &l[b], &r[b], &keep[b], &lose[b])
			tKeep[b] = sel8(a, tl[b], tr[b])
		}
		sCW := xorBlock(lose[0], lose[1])
		tLCW := tl[0] ^ tl[1] ^ a ^ 1
		tRCW := tr[0] ^ tr[1] ^ a
		tKeepCW := sel8(a, tLCW, tRCW)
		for b := 0; b < 2; b++ {
			s[b] = keep[b]
			xorIf(t[b], &s[b], &sCW)
			t[b] = tKeep[b] ^ (t[b] & tKeepCW)
		}
		k0.seedCW[j-1] = sCW
		k0.tL |= uint64(tLCW) << uint(j-1)
		k0.tR |= uint64(tRCW) << uint(j-1)
	}
	var w [2]prg.Block
	prg.Hash(prg.ValueLeft, w[:], s[:])
	cw := xorBlock(w[0], w[1])
	// β goes to bit pos of cw; every byte is touched, so the address
	// does not tell pos (α's low bits).
	pos := alpha & prg.Mask(nu)
	for i := range cw {
		hit := uint8(((uint64(i) ^ pos/8) - 1) >> 63) // 1 iff i = pos/8
		cw[i] ^= (beta & hit) << (pos % 8)
	}
	k0.leafCW = cw
	k1 = &XorKey{party: 1, inBits: inBits, root: root1, seedCW: append([]prg.Block(nil), k0.seedCW...),
		tL: k0.tL, tR: k0.tR, leafCW: cw}
	s, l, r, w = [2]prg.Block{}, [2]prg.Block{}, [2]prg.Block{}, [2]prg.Block{}
	keep, lose = [2]prg.Block{}, [2]prg.Block{}
	return k0, k1, nil
}

func xorBlock(a, b prg.Block) prg.Block {
	for i := range a {
		a[i] ^= b[i]
	}
	return a
}

// MarshalBinary returns the kord-v1 type-0x03 serialization of the key.
func (k *XorKey) MarshalBinary() ([]byte, error) {
	return k.AppendBinary(make([]byte, 0, XorKeySize(k.inBits)))
}

// AppendBinary appends the serialization of the key to b.
func (k *XorKey) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, magic, version, byte(XorDPF), k.party, byte(k.inBits), 1)
	b = appendTree(b, &k.root, k.seedCW, k.tL, k.tR)
	b = append(b, k.leafCW[:]...)
	return b, nil
}

// UnmarshalBinary parses a type-0x03 key strictly: every byte string is
// either a valid key or an error that names the field at fault (test with
// errors.Is). It never panics.
func (k *XorKey) UnmarshalBinary(data []byte) error {
	if err := checkHeader(data); err != nil {
		return err
	}
	if Type(data[2]) != XorDPF {
		return fmt.Errorf("%w: got %#02x", ErrXorType, data[2])
	}
	if data[3] > 1 {
		return fmt.Errorf("%w: got %d", ErrParty, data[3])
	}
	l := int(data[4])
	if l < 1 || l > 64 {
		return fmt.Errorf("%w: got %d", ErrInBits, l)
	}
	if data[5] != 1 {
		return fmt.Errorf("%w: got %d", ErrXorOutBits, data[5])
	}
	if want := XorKeySize(l); len(data) != want {
		return fmt.Errorf("%w: got %d bytes, a type 0x03 key with ℓ = %d is %d", ErrLength, len(data), l, want)
	}
	d := l - xorNu(l)
	nk := XorKey{party: data[3], inBits: l, seedCW: make([]prg.Block, d)}
	off, err := parseTree(data, headerSize, &nk.root, nk.seedCW, &nk.tL, &nk.tR)
	if err != nil {
		return err
	}
	copy(nk.leafCW[:], data[off:])
	*k = nk
	return nil
}

// ParseXorKey is UnmarshalBinary into a new XorKey.
func ParseXorKey(data []byte) (*XorKey, error) {
	k := new(XorKey)
	if err := k.UnmarshalBinary(data); err != nil {
		return nil, err
	}
	return k, nil
}
