// Package gates builds two-party FSS gates (building blocks) on top of kord's
// dealerless DPF and DCF keys: EQ, CMP (public and secret comparand), Mod,
// TR (truncation), Ctn (interval containment), DigDec (digit
// decomposition), PubLUT, PriLUT, Approx (piecewise polynomial), ReLU and
// DReLU.
//
// Every gate has two halves.
//
//   - Offline, Gen asks a KeySource for the gate's key complement: a few DPF
//     or DCF key pairs plus additive shares of the input masks. A mask that
//     is fresh randomness is drawn inside the key-generation modules
//     (derived mode, zero network bytes); a mask or payload that must be a
//     specific joint secret (a second key at the same mask, a payload that
//     is a function of the mask, a secret table entry) is submitted as
//     additive shares (bound mode). No gate needs Beaver triples: every
//     product of a secret bit with a secret value is pushed into a DCF
//     payload, and every function of a mask (r², the integer lift of r) is
//     read off a derived key by a local inner product with its full-domain
//     evaluation.
//   - Online, each party holds additive shares of the inputs in Z_{2^ℓ}; the
//     parties exchange masked openings x̂ = x + r over a framed TCP
//     connection (Conn), evaluate their keys locally and return additive
//     shares of the output. Outputs are additive shares, not LLAMA masked
//     wires, so gates compose with ordinary linear arithmetic; each gate
//     states its output ring.
//
// Every gate is batched: one call evaluates a vector of independent
// operations with one message per round for the whole vector.
//
// The mathematics, the cost of each complement and the comparison with Xing
// et al. (NDSS'25) and KORD are in docs/gates.md.
package gates
