package llama

import "fmt"

// AppendDualDCF appends one party's DualDCF key pack to dst, exactly as
// LLAMA's Peer::send_ddcf_keypack writes it: that party's DCF key (shape
// p, LLAMA's layout) followed by its additive shares sb of payload2, one
// element of E bytes each (Group elements below 2^Bout). With the DCF made
// for payload1 − payload2, the two parties' evaluations plus their sb add
// up to payload1 where x < α and to payload2 elsewhere (LLAMA's
// evalDualDCF). The DCF key can come from the modules (a bound request
// with shares of payload1 − payload2); sb is the party's own share.
func AppendDualDCF(dst []byte, p Params, dcfKey []byte, sb []uint64) ([]byte, error) {
	if _, err := Parse(p, dcfKey); err != nil {
		return nil, fmt.Errorf("llama: DualDCF: %w", err)
	}
	if len(sb) != p.Group {
		return nil, fmt.Errorf("llama: DualDCF: %w: %d shares of payload2, group %d", ErrPayload, len(sb), p.Group)
	}
	m := mask(p.OutBits)
	for i, v := range sb {
		if v&^m != 0 {
			return nil, fmt.Errorf("llama: DualDCF: %w: sb[%d]", ErrValue, i)
		}
	}
	dst = append(dst, dcfKey...)
	return appendValues(dst, sb, ElemBytes(p.OutBits)), nil
}

// DualDCFSize is the length of one DualDCF key pack of shape p.
func (p Params) DualDCFSize() int { return p.KeySize() + ElemBytes(p.OutBits)*p.Group }
