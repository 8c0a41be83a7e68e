//go:build !amd64 || purego

package prg

// Without amd64 assembly (or under the purego tag) only the portable
// "generic" kernel, registered in kernel.go, is available. Under purego,
// crypto/aes itself also runs its pure-Go implementation.

func archHash2(kernelID, Lane, Lane, []Block, []Block, []Block) bool { return false }

func archHash4(kernelID, []Block, []Block, []Block, []Block, []Block) bool { return false }

func archRaw(kernelID, *Schedule, []Block, []Block) bool { return false }

func archHash2F(kernelID, Lane, Lane, []Block, []Block, []Block) bool { return false }

func archTree(kernelID, []Block, []Block, *Block, *Block) bool { return false }

func archLeaves(kernelID, []uint64, []Block, *Block, *Block, uint64, uint64, uint64) bool {
	return false
}

func archHasDPFGen(kernelID) bool { return false }

func archDPFGen(kernelID, []Block, []uint64, uint, []byte, int, int, int, uint, bool) bool {
	return false
}

func archHasDCFValues(kernelID, int) bool { return false }

func archDCFValues(kernelID, []Block, []uint64, uint, []uint64, []uint64, []byte, int, int, uint64, bool) bool {
	return false
}
