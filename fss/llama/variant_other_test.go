//go:build !amd64 || purego

package llama

func kernelVariants() []bool  { return []bool{false} }
func setKernelVariant(z bool) {}
