//go:build amd64 && !purego

package llama

import "golang.org/x/sys/cpu"

// rekeyExpand4 is the AES-NI node kernel (rekey_amd64.s): for i < n,
// out[i][j] = AES_{seeds[i] with bits 0,1 cleared}(j) for j = 0..3, the key
// schedule expanded on the fly (PSHUFB + AESENCLAST per round). Constant time: no
// table lookups on the secret seed.
//
//go:noescape
func rekeyExpand4(seeds *Block, out *[4]Block, n int)

// rekeyExpandZ8 is rekeyExpand4 on AVX-512 VAES for n a multiple of 8:
// four nodes' key schedules side by side in the lanes of one ZMM register,
// two registers interleaved.
//
//go:noescape
func rekeyExpandZ8(seeds *Block, out *[4]Block, n int)

var hasKernel = cpu.X86.HasAES && cpu.X86.HasSSSE3 // AESENC, AESENCLAST, PSHUFB

// useZ selects the AVX-512 VAES kernel for runs of eight nodes (AVX-512 F
// and BW for the ZMM moves, shuffles and shifts, VAES for the rounds); a
// test turns it off to check the AES-NI kernel alone.
var useZ = hasKernel && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VAES

func kernelExpand(ex [][4]Block, seeds []Block) bool {
	if !hasKernel || len(seeds) == 0 {
		return hasKernel
	}
	_ = ex[len(seeds)-1] // bounds: ex holds a row per seed
	if m := len(seeds) &^ 7; useZ && m > 0 {
		rekeyExpandZ8(&seeds[0], &ex[0], m)
		seeds, ex = seeds[m:], ex[m:]
		if len(seeds) == 0 {
			return true
		}
	}
	rekeyExpand4(&seeds[0], &ex[0], len(seeds))
	return true
}
