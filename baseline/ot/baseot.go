package ot

import (
	"crypto/ecdh"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
)

// PointSize is the length of an encoded Curve25519 point: u little-endian,
// the parity of y in bit 255.
const PointSize = 32

// Curve25519 in Montgomery form: y² = x³ + 486662x² + x over GF(2^255 − 19).
var (
	curveP = func() *big.Int {
		p := new(big.Int).Lsh(big.NewInt(1), 255)
		return p.Sub(p, big.NewInt(19))
	}()
	curveA = big.NewInt(486662)
)

// point is an affine point of Curve25519 (never the point at infinity).
type point struct{ x, y *big.Int }

// ErrPoint is returned for a point encoding that is not on Curve25519.
var ErrPoint = errors.New("ot: not an encoding of a Curve25519 point")

// lift returns the point with u-coordinate u (little-endian, top bit
// ignored) and the y of the given parity.
func lift(u []byte, odd bool) (point, error) {
	if len(u) != PointSize {
		return point{}, fmt.Errorf("%w: %d bytes, want %d", ErrPoint, len(u), PointSize)
	}
	le := make([]byte, PointSize)
	copy(le, u)
	le[31] &= 0x7f
	for i, j := 0, len(le)-1; i < j; i, j = i+1, j-1 {
		le[i], le[j] = le[j], le[i]
	}
	x := new(big.Int).SetBytes(le)
	if x.Cmp(curveP) >= 0 {
		return point{}, fmt.Errorf("%w: u is not reduced", ErrPoint)
	}
	// rhs = x³ + A x² + x
	rhs := new(big.Int).Mul(x, x)
	rhs.Mod(rhs, curveP)
	t := new(big.Int).Mul(rhs, x)
	rhs.Mul(rhs, curveA)
	rhs.Add(rhs, t)
	rhs.Add(rhs, x)
	rhs.Mod(rhs, curveP)
	y := new(big.Int).ModSqrt(rhs, curveP)
	if y == nil {
		return point{}, fmt.Errorf("%w: u is on the twist", ErrPoint)
	}
	if (y.Bit(0) == 1) != odd {
		y.Sub(curveP, y)
		y.Mod(y, curveP)
	}
	return point{x: x, y: y}, nil
}

// encode writes u little-endian with y's parity in bit 255.
func (p point) encode() []byte {
	be := p.x.FillBytes(make([]byte, PointSize))
	for i, j := 0, len(be)-1; i < j; i, j = i+1, j-1 {
		be[i], be[j] = be[j], be[i]
	}
	if p.y.Bit(0) == 1 {
		be[31] |= 0x80
	}
	return be
}

// uBytes is the X25519 public-key encoding of p (u only).
func (p point) uBytes() []byte {
	b := p.encode()
	b[31] &= 0x7f
	return b
}

// add returns p + q; it fails when p = ±q (doubling or the point at
// infinity), which happens with negligible probability for honest parties.
func add(p, q point) (point, error) {
	dx := new(big.Int).Sub(q.x, p.x)
	dx.Mod(dx, curveP)
	if dx.Sign() == 0 {
		return point{}, errors.New("ot: point addition of ±P (degenerate base-OT message)")
	}
	inv := new(big.Int).ModInverse(dx, curveP)
	l := new(big.Int).Sub(q.y, p.y)
	l.Mul(l, inv)
	l.Mod(l, curveP)
	x3 := new(big.Int).Mul(l, l)
	x3.Sub(x3, curveA)
	x3.Sub(x3, p.x)
	x3.Sub(x3, q.x)
	x3.Mod(x3, curveP)
	y3 := new(big.Int).Sub(p.x, x3)
	y3.Mul(y3, l)
	y3.Sub(y3, p.y)
	y3.Mod(y3, curveP)
	return point{x: x3, y: y3}, nil
}

func neg(p point) point {
	y := new(big.Int).Sub(curveP, p.y)
	return point{x: p.x, y: y.Mod(y, curveP)}
}

// roKey is the random oracle H(i, A, B, shared) truncated to 16 bytes.
func roKey(i int, a, b, shared []byte) [16]byte {
	h := sha256.New()
	h.Write([]byte("kord/baseline/ot/co15"))
	var ib [8]byte
	binary.LittleEndian.PutUint64(ib[:], uint64(i))
	h.Write(ib[:])
	h.Write(a)
	h.Write(b)
	h.Write(shared)
	var k [16]byte
	copy(k[:], h.Sum(nil))
	return k
}

// BaseSender is the sender's side of a batch of Chou–Orlandi base OTs.
type BaseSender struct {
	priv *ecdh.PrivateKey
	a    point
	enc  []byte
}

// NewBaseSender draws the sender's scalar; Message is its first flight.
func NewBaseSender(rnd io.Reader) (*BaseSender, error) {
	priv, err := ecdh.X25519().GenerateKey(rnd)
	if err != nil {
		return nil, fmt.Errorf("ot: base sender key: %w", err)
	}
	a, err := lift(priv.PublicKey().Bytes(), false)
	if err != nil {
		return nil, fmt.Errorf("ot: base sender point: %w", err)
	}
	return &BaseSender{priv: priv, a: a, enc: a.encode()}, nil
}

// Message is A, encoded (PointSize bytes).
func (s *BaseSender) Message() []byte { return append([]byte(nil), s.enc...) }

// Keys reads the receiver's flight (n points) and returns both keys of
// each OT.
func (s *BaseSender) Keys(msg []byte, n int) (k0, k1 [][16]byte, err error) {
	if len(msg) != n*PointSize {
		return nil, nil, fmt.Errorf("ot: base-OT receiver message is %d bytes, want %d for %d OTs", len(msg), n*PointSize, n)
	}
	k0, k1 = make([][16]byte, n), make([][16]byte, n)
	negA := neg(s.a)
	for i := range n {
		enc := msg[i*PointSize : (i+1)*PointSize]
		b, err := lift(enc, enc[31]&0x80 != 0)
		if err != nil {
			return nil, nil, fmt.Errorf("ot: base OT %d: %w", i, err)
		}
		d, err := add(b, negA)
		if err != nil {
			return nil, nil, fmt.Errorf("ot: base OT %d: %w", i, err)
		}
		for c, q := range []point{b, d} {
			pub, err := ecdh.X25519().NewPublicKey(q.uBytes())
			if err != nil {
				return nil, nil, fmt.Errorf("ot: base OT %d: %w", i, err)
			}
			sh, err := s.priv.ECDH(pub)
			if err != nil {
				return nil, nil, fmt.Errorf("ot: base OT %d: %w", i, err)
			}
			k := roKey(i, s.enc, enc, sh)
			if c == 0 {
				k0[i] = k
			} else {
				k1[i] = k
			}
		}
	}
	return k0, k1, nil
}

// BaseReceive runs the receiver's side for the given choices against the
// sender's first flight: it returns its flight (len(choices) points) and
// the chosen keys.
func BaseReceive(rnd io.Reader, senderMsg []byte, choices []bool) (msg []byte, keys [][16]byte, err error) {
	if len(senderMsg) != PointSize {
		return nil, nil, fmt.Errorf("ot: base-OT sender message is %d bytes, want %d", len(senderMsg), PointSize)
	}
	a, err := lift(senderMsg, senderMsg[31]&0x80 != 0)
	if err != nil {
		return nil, nil, fmt.Errorf("ot: base-OT sender message: %w", err)
	}
	apub, err := ecdh.X25519().NewPublicKey(a.uBytes())
	if err != nil {
		return nil, nil, fmt.Errorf("ot: base-OT sender message: %w", err)
	}
	msg = make([]byte, 0, len(choices)*PointSize)
	keys = make([][16]byte, len(choices))
	for i, c := range choices {
		priv, err := ecdh.X25519().GenerateKey(rnd)
		if err != nil {
			return nil, nil, fmt.Errorf("ot: base receiver key: %w", err)
		}
		p, err := lift(priv.PublicKey().Bytes(), false)
		if err != nil {
			return nil, nil, fmt.Errorf("ot: base receiver point: %w", err)
		}
		if c {
			if p, err = add(a, p); err != nil {
				return nil, nil, err
			}
		}
		enc := p.encode()
		sh, err := priv.ECDH(apub)
		if err != nil {
			return nil, nil, fmt.Errorf("ot: base OT %d: %w", i, err)
		}
		keys[i] = roKey(i, senderMsg, enc, sh)
		msg = append(msg, enc...)
	}
	return msg, keys, nil
}
