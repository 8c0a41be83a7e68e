// Package mpspdz reads and writes MP-SPDZ's file preprocessing for its
// two-party semi-honest ring protocol semi2k over Z_2^64: the Triples,
// Squares, Bits and matrix-triple files its online phase reads with -F
// (layout and bytes in docs/mpspdz.md and the spec it cites). Each player's
// file holds only that player's additive shares (x = x0 + x1 mod 2^64).
package mpspdz
