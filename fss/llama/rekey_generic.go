//go:build !amd64 || purego

package llama

// Without amd64 assembly (or under purego) nodes go through crypto/aes.
const hasKernel = false

func kernelExpand(ex [][4]Block, seeds []Block) bool { return false }
