//go:build !amd64 || purego

package prg

// Without amd64 assembly (or under the purego tag) only the portable
// "generic" kernel, registered in kernel.go, is available. Under purego,
// crypto/aes itself also runs its pure-Go implementation.
