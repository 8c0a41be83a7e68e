//go:build !amd64 || purego

package kdf

// Without amd64 assembly (or under purego) the batch forms run crypto/aes
// one block at a time.
func newMulti(key *[32]byte) (multi, error) { return newPortable(key) }
