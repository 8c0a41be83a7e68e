// Package ntru implements NTRUEncrypt-SVES as specified in IEEE 1363.1 for
// the parameter sets ees1087ep1 and ees1499ep1 (p = 3, q = 2048, ternary
// keys, no product form), interoperating with Security Innovation's
// reference implementation (bit orders, hash stream, key blobs).
//
// The API is shaped for use as a KEM: generate a key pair with GenerateKey,
// encrypt a short random secret with (*PublicKey).Encrypt and recover it with
// (*PrivateKey).Decrypt. Keys serialise to the reference key-blob format.
//
// Constant time: decryption's polynomial products (f·e and the re-encryption
// r·h) use a dense product over all coefficients of the secret ternary
// polynomial with masks, so neither branches nor memory addresses depend on
// the secret indices. Encryption uses a faster sparse product whose load
// addresses depend on the blinding polynomial's indices; see docs/ntru.md.
package ntru
