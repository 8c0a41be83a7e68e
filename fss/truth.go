package fss

// Truth is the plaintext function that a key pair of shape p for (α, β)
// shares: β at x = α for a DPF, β at every x < α for a DCF, and 0
// elsewhere. A pair is correct when Eval(k0, x) + Eval(k1, x), reduced to
// p.OutBits bits, equals Truth(p, α, β, x) for every x; tests and the
// delivery verifiers check exactly that. β is returned as given: pass it
// reduced to p.OutBits bits.
func Truth(p Params, alpha, beta, x uint64) uint64 {
	if p.Type == DPF && x == alpha || p.Type == DCF && x < alpha {
		return beta
	}
	return 0
}
