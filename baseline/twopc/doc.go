// Package twopc is kord's dealerless 2PC baseline (issue 25): two parties
// that hold additive shares of α (mod 2^ℓ) and β (mod 2^n) generate a
// kord-v1 DPF or DCF key pair together, with no dealer and no trusted
// module, level by level in the style of Doerner–shelat (Floram, CCS'17)
// and Xing et al. (NDSS'25): the distributed key generation that
// google/distributed_point_functions cites as Algorithm 8 of ePrint
// 2022/866. The keys are byte-for-byte kord-v1 (fss.ParseKey reads them,
// fss's Eval evaluates them); only how they are made differs.
//
// The protocol, per key, over one connection (Conn: each exchange is one
// frame each way, sent at once):
//
//  1. Bit decomposition of α from its additive shares: the carry chain
//     c_{i+1} = x0_i x1_i ⊕ (x0_i ⊕ x1_i) c_i, one AND per bit on XOR
//     shares, each AND's cross terms from OTs; ℓ exchanges.
//  2. Per level j (ℓ levels, 2 exchanges each), each party expands its
//     whole tree level (full-domain: O(2^ℓ) PRG calls per party per key)
//     and sums its left and right children: off-path nodes are equal in
//     the two trees and cancel. sCW_j = MUX(α_j; ΣR, ΣL), one OT each way
//     with the XOR-shared α_j as choice; the bit corrections are linear.
//     The shares are revealed. DCF: the value sums are multiplexed in the
//     same OT (α_j·Z, α_j·β), and VCW_j = (−1)^{t_1}·W needs t_1 on α's
//     path: its XOR shares come for free from the control-bit counts mod
//     4 (T_0 − T_1 = ±1), then one sign MUX (OT each way).
//  3. The last word (−1)^{t_1}(β − C(s_0) + C(s_1)) (DPF) or its DCF
//     analogue: a sign MUX and a reveal, 3 exchanges.
//
// Every OT is a random IKNP OT derandomized when its choice is known
// (Beaver): all of a key's OT columns travel in its first exchange, a
// choice costs one bit one exchange ahead of the answer. See
// docs/baseline.md for the costs, what each party learns, and the
// measurements beside kord.
//
// GenBatch runs many keys of one shape in lockstep over the same
// connection: one key's exchanges, every key's bytes, each key on its own
// OT fork (ot.Receiver.Fork) of the session's base OTs.
//
// Local work is O(2^ℓ): a full-tree protocol. A variant without the full
// tree must evaluate the PRG (AES) inside generic 2PC (garbled circuits)
// along α's path, which is not implemented here; widths beyond what the
// machine expands in minutes (ℓ = 32: 2^33 seed expansions per party) are
// extrapolated by cmd/kord/internal/compare from measured rows.
package twopc
