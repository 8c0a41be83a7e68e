//go:build !amd64 || purego

package kdf

// withoutWideKernel has nothing to choose here (tests).
func withoutWideKernel(multi) {}
