//go:build amd64 && !purego

package llama

// kernelVariants lists the node kernels to check: the AVX-512 one (when
// the CPU has it) and the AES-NI one alone.
func kernelVariants() []bool {
	if useZ {
		return []bool{true, false}
	}
	return []bool{false}
}

// setKernelVariant turns the AVX-512 kernel on (where the CPU has it) or
// off.
func setKernelVariant(z bool) {
	useZ = z && hasKernel && zAvailable
}

var zAvailable = useZ
