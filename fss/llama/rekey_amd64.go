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

var hasKernel = cpu.X86.HasAES && cpu.X86.HasSSSE3 // AESENC, AESENCLAST, PSHUFB

func kernelExpand(ex [][4]Block, seeds []Block) bool {
	if !hasKernel || len(seeds) == 0 {
		return hasKernel
	}
	_ = ex[len(seeds)-1] // bounds: ex holds a row per seed
	rekeyExpand4(&seeds[0], &ex[0], len(seeds))
	return true
}
