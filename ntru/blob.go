package ntru

import "errors"

// Key blobs follow the reference implementation:
//
//	public:  0x01 ‖ OID ‖ packed h
//	private: 0x02 ‖ OID ‖ packed h ‖ F
//
// where F is the +1 indices then the −1 indices packed 11 bits each, or F's
// trits packed five per byte, whichever is shorter (the index list, for both
// supported sets). The parsers also accept the C reference's variant with
// an OID-length byte 0x03 between the tag and the OID.

const (
	tagPublic  = 0x01
	tagPrivate = 0x02
	oidLenByte = 0x03
)

// ErrMalformedKey is returned for any key blob that cannot be parsed.
var ErrMalformedKey = errors.New("ntru: malformed key blob")

// MarshalBinary encodes the public key blob.
func (k *PublicKey) MarshalBinary() ([]byte, error) {
	out := make([]byte, 0, 4+len(k.packedH))
	out = append(out, tagPublic)
	out = append(out, k.p.oid[:]...)
	return append(out, k.packedH...), nil
}

// MarshalBinary encodes the private key blob.
func (k *PrivateKey) MarshalBinary() ([]byte, error) {
	p := k.pub.p
	out := make([]byte, 0, 4+len(k.pub.packedH)+p.fLen())
	out = append(out, tagPrivate)
	out = append(out, p.oid[:]...)
	out = append(out, k.pub.packedH...)
	return append(out, k.packF()...), nil
}

func (k *PrivateKey) packF() []byte {
	p := k.pub.p
	if p.listedLen() <= p.tritsLen() {
		idx := append(append([]uint16(nil), k.fPlus...), k.fMinus...)
		out := make([]byte, p.listedLen())
		packBits(out, idx, uint(indexBits(p.n)))
		return out
	}
	return packTrits5(k.fTrits)
}

// packTrits5 packs trits five per byte, the first trit as the least
// significant base-3 digit; −1 is the digit 2.
func packTrits5(t []uint8) []byte {
	out := make([]byte, (len(t)+4)/5)
	for i := len(t) - 1; i >= 0; i-- {
		out[i/5] = out[i/5]*3 + t[i]
	}
	return out
}

// parseHeader checks the tag and OID and returns the set and the rest.
func parseHeader(blob []byte, tag byte) (ParamSet, *params, []byte, error) {
	if len(blob) < 4 || blob[0] != tag {
		return 0, nil, nil, ErrMalformedKey
	}
	rest := blob[1:]
	if rest[0] == oidLenByte {
		rest = rest[1:]
	}
	if len(rest) < 3 {
		return 0, nil, nil, ErrMalformedKey
	}
	for s, p := range paramTable {
		if rest[0] == p.oid[0] && rest[1] == p.oid[1] && rest[2] == p.oid[2] {
			return s, p, rest[3:], nil
		}
	}
	return 0, nil, nil, errors.New("ntru: key blob has an unknown parameter-set OID")
}

func parseH(set ParamSet, p *params, rest []byte) (*PublicKey, []byte, error) {
	if len(rest) < p.ctLen() {
		return nil, nil, ErrMalformedKey
	}
	h := make([]uint16, p.n)
	if !unpackBits(h, rest[:p.ctLen()], qBits) {
		return nil, nil, ErrMalformedKey
	}
	return newPublicKey(set, p, h), rest[p.ctLen():], nil
}

// ParsePublicKey decodes a public key blob.
func ParsePublicKey(blob []byte) (*PublicKey, error) {
	set, p, rest, err := parseHeader(blob, tagPublic)
	if err != nil {
		return nil, err
	}
	k, rest, err := parseH(set, p, rest)
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, ErrMalformedKey
	}
	return k, nil
}

// ParsePrivateKey decodes a private key blob.
func ParsePrivateKey(blob []byte) (*PrivateKey, error) {
	set, p, rest, err := parseHeader(blob, tagPrivate)
	if err != nil {
		return nil, err
	}
	pub, rest, err := parseH(set, p, rest)
	if err != nil {
		return nil, err
	}
	var plus, minus []uint16
	switch {
	case len(rest) == p.listedLen() && p.listedLen() <= p.tritsLen():
		idx := make([]uint16, 2*p.df)
		if !unpackBits(idx, rest, uint(indexBits(p.n))) {
			return nil, ErrMalformedKey
		}
		plus, minus = idx[:p.df], idx[p.df:]
	case len(rest) == p.tritsLen():
		var ok bool
		if plus, minus, ok = unpackTrits5(rest, p.n); !ok {
			return nil, ErrMalformedKey
		}
	default:
		return nil, ErrMalformedKey
	}
	if len(plus) != p.df || len(minus) != p.df {
		return nil, ErrMalformedKey
	}
	seen := make([]bool, p.n)
	for _, list := range [][]uint16{plus, minus} {
		for _, i := range list {
			if int(i) >= p.n || seen[i] {
				return nil, ErrMalformedKey
			}
			seen[i] = true
		}
	}
	return newPrivateKey(pub, sortedCopy(plus), sortedCopy(minus)), nil
}

// unpackTrits5 inverts packTrits5 into index lists; digits past n must be 0.
func unpackTrits5(b []byte, n int) (plus, minus []uint16, ok bool) {
	for j, v := range b {
		if v >= 243 {
			return nil, nil, false
		}
		for d := 0; d < 5; d++ {
			i := 5*j + d
			t := v % 3
			v /= 3
			switch {
			case t == 0:
			case i >= n:
				return nil, nil, false
			case t == 1:
				plus = append(plus, uint16(i))
			default:
				minus = append(minus, uint16(i))
			}
		}
	}
	return plus, minus, true
}
