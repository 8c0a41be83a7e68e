package llama

// Gen returns the two key files (party 0 = LLAMA's server first) in LLAMA's
// exact layout for the DCF β·[x < α], exactly as LLAMA's keyGenDCF and
// Peer::send_dcf_keypack produce them when its PRG yields root0 and root1.
// The roots are used as given (control bit in bit 0, bit 1 ignored by the
// tree) and must differ in bit 0. α must fit in Bin bits, β must have
// Group elements each below 2^Bout. It is GenBatch for one key.
func Gen(p Params, alpha uint64, beta []uint64, root0, root1 Block) (key0, key1 []byte, err error) {
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	key0, key1 = make([]byte, p.KeySize()), make([]byte, p.KeySize())
	if err := GenBatch(p, []uint64{alpha}, beta, []Block{root0}, []Block{root1}, key0, key1); err != nil {
		return nil, nil, err
	}
	return key0, key1, nil
}

// GenKeys is Gen returning parsed keys: k0 for party 0 (server), k1 for
// party 1 (client).
func GenKeys(p Params, alpha uint64, beta []uint64, root0, root1 Block) (k0, k1 *Key, err error) {
	key0, key1, err := Gen(p, alpha, beta, root0, root1)
	if err != nil {
		return nil, nil, err
	}
	if k0, err = Parse(p, key0); err != nil {
		return nil, nil, err
	}
	if k1, err = Parse(p, key1); err != nil {
		return nil, nil, err
	}
	return k0, k1, nil
}
