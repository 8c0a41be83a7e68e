//go:build amd64 && !purego

package kdf

import "golang.org/x/sys/cpu"

// The AES-NI kernels (aes256_amd64.s): expand256 is the FIPS-197 AES-256 key
// expansion with AESKEYGENASSIST (no table, so no secret-indexed memory
// access); encrypt256 encrypts blocks in place, eight in flight.

//go:noescape
func expand256(key *[32]byte, ks *schedule256)

//go:noescape
func encrypt256(ks *schedule256, buf *byte, n int)

// encrypt256v is encrypt256 with VAES on ZMM registers, 32 blocks in
// flight, for CPUs with AVX-512 VAES.
//
//go:noescape
func encrypt256v(ks *schedule256, buf *byte, n int)

var (
	hasAESNI   = cpu.X86.HasAES && cpu.X86.HasSSE41
	hasVAES512 = hasAESNI && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VAES
)

// newMulti returns the multi-block cipher under key: the AES-NI kernel
// when the CPU has it, crypto/aes one block at a time otherwise.
func newMulti(key *[32]byte) (multi, error) {
	if !hasAESNI {
		return newPortable(key)
	}
	m := &niMulti{vaes: hasVAES512}
	expand256(key, &m.ks)
	return m, nil
}

type niMulti struct {
	ks   schedule256
	vaes bool
}

func (m *niMulti) encrypt(buf []byte) {
	n := len(buf) / 16
	switch {
	case n == 0:
	case m.vaes && n >= 32:
		encrypt256v(&m.ks, &buf[0], n)
	default:
		encrypt256(&m.ks, &buf[0], n)
	}
}
