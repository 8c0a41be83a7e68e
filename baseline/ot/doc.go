// Package ot is the oblivious-transfer layer of kord's dealerless 2PC
// baseline (issue 25): base OTs over Curve25519 and IKNP OT extension.
//
// Base OT is Chou–Orlandi's "simplest OT" (LATINCRYPT 2015) on Curve25519:
// the sender publishes A = aG, the receiver of choice c sends B = bG (c = 0)
// or A + bG (c = 1), and the keys are H(i, A, B, u(aB)), H(i, A, B,
// u(a(B − A))) for the sender and H(i, A, B, u(bA)) for the receiver. The
// scalar multiplications are X25519 (crypto/ecdh, clamped scalars); the
// one point addition a side needs (A + bG, B − A) is done here in affine
// Montgomery coordinates with math/big, the points lifted from their
// u-coordinate to the canonical (even) y. A receiver's point travels as 32
// bytes: u with the parity of y in the unused top bit.
//
// Security caveats. The protocol is used against semi-honest parties only,
// in the random-oracle model (H is SHA-256). Chou–Orlandi's original claim
// of UC security against malicious parties was shown not to hold (Genç,
// Iovino, Rial 2017; Hauck–Loss 2017); a malicious receiver that is not
// bound to a well-formed B, or a sender that picks A of small order, is out
// of scope. One A is reused for a whole batch, as the paper does.
//
// OT extension is IKNP (Ishai–Kilian–Nissim–Petrank 2003), semi-honest: the
// extension receiver runs 128 base OTs as base-OT sender of seed pairs
// (k_i^0, k_i^1), the extension sender as base-OT receiver with a random
// s ∈ {0,1}^128. Each seed keys an AES-128-CTR stream (crypto/aes) that
// both sides read in the same order. For m OTs with choices r the receiver
// sends the columns u_i = G(k_i^0) ⊕ G(k_i^1) ⊕ r; the sender forms
// q_i = G(k_i^{s_i}) ⊕ s_i·u_i, whose rows are q_j = t_j ⊕ r_j·s. Messages
// are masked with a tweakable correlation-robust hash of the rows,
// H(j, x) = π(π(x) ⊕ j) ⊕ π(x) with π fixed-key AES (Guo et al. 2020), one
// block per 16 message bytes (tweak j, block k). The OT index j never
// repeats within a session direction.
//
// Choices may be fixed before the messages are known: Receiver.Choose
// sends u at once, Sender.Send masks the messages whenever they are ready.
// The 2PC protocol uses this to send the choice columns of a whole stage
// in one flight.
package ot
