// Package fss implements the kord-v1 distributed point function (DPF, after
// Boyle–Gilboa–Ishai 2016) and distributed comparison function (DCF, after
// Boyle et al., EUROCRYPT 2021) over the ring Z_{2^n}, with input widths ℓ
// and output widths n from 1 to 64.
//
// A key pair (k0, k1) shares a function f: for every x,
// Eval(k0, x) + Eval(k1, x) = f(x) mod 2^n, where f(x) = β at x = α and 0
// elsewhere (DPF), or f(x) = β for x < α and 0 elsewhere (DCF).
//
// Keys follow the frozen kord-v1 PRG convention and wire format
// (docs/keyformat.md), so a key from the trusted-dealer baseline here, from a
// pair of kord key-generation modules, or from any other implementation of
// the spec is the same key byte for byte. The package is the dealer's
// mathematics only: it knows nothing of modules, hosts or pairing.
//
// A serialized key can be evaluated in place, without parsing it into a
// Key: ViewKey (one key) and ViewSlab (N keys of one shape end to end)
// validate exactly as ParseKey does and allocate nothing.
package fss
