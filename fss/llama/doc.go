// Package llama implements the "llama" key profile: the distributed
// comparison function (DCF) of EzPC LLAMA (PoPETs 2022, FSS/ in
// github.com/mpc-msri/EzPC), reproduced bit for bit so that LLAMA's own
// evaluator accepts keys made here. The normative description is
// shared/spec/llama/dcf.md; this comment restates it.
//
// # Function
//
// A key pair (k0, k1) for widths Bin (input) and Bout (output), both 1..64,
// a threshold α < 2^Bin and a payload vector β of Group ≥ 1 elements of
// Z_{2^Bout} satisfies, element by element,
//
//	Eval(0, k0, x) + Eval(1, k1, x) = β · [x < α]  (mod 2^Bout)
//
// with x and α unsigned Bin-bit integers and the comparison strict. Party 0
// is LLAMA's "server" key, party 1 its "client" key; the evaluating party,
// not any bit of the key, fixes the sign of its share (+ for 0, − for 1).
//
// # Blocks and PRG
//
// A block is 16 bytes in memory order; bit j is bit j of the block read as
// a 128-bit little-endian integer, so bits 0 and 1 live in byte 0. A tree
// node is one block s: its control bit is bit 0, bit 1 carries no meaning,
// and the node's PRG is AES-128 keyed by s with bits 0 and 1 cleared,
// applied to the blocks whose first eight bytes hold the little-endian
// integers 0, 1, 2, 3 (the rest zero): left seed, right seed, left value,
// right value. Every node therefore needs its own AES key schedule, unlike
// kord-v1's fixed-key hashes.
//
// Group elements are read out of a block by convert: with w = ceil(Bout/8)
// bytes per element, if w·Group ≤ 16 element i is the little-endian integer
// at byte offset i·w of the block (mod 2^Bout); otherwise the block itself
// becomes an AES-128 key (all 128 bits, nothing cleared), the stream
// AES(0) ‖ AES(1) ‖ … long enough for w·Group bytes is produced, and
// element i is read at offset i·w of that stream. Per-level value blocks
// are converted as the AES produced them; the final leaf seed is converted
// with bits 0 and 1 cleared.
//
// # Generation
//
// The two roots must differ in bit 0. The path follows α from its most
// significant bit. At each level both parties' current seeds are expanded;
// the side off α's path ("lose") yields the seed correction
// (sLose0 ⊕ sLose1 with bits 0,1 cleared), the control corrections are
// tL = t(sL0)⊕t(sL1)⊕keep⊕1 and tR = t(sR0)⊕t(sR1)⊕keep, packed into the
// correction block in bits 1 and 0. The value correction of the level is
//
//	v = σ · (conv(vLose1) − conv(vLose0) − Vα + keep·β),  σ = −1 iff t1 = 1
//
// and Vα accumulates conv(vKeep0) − conv(vKeep1) + σ·v. A party whose
// control bit is set XORs the seed correction (with the kept side's t
// correction in bit 0) into its kept seed. After the last level
// g = ±(conv(s1) − conv(s0) − Vα), negated iff the final t1 is set.
//
// # Evaluation
//
// From the root, for each bit of x from the top: expand the seed toward
// x's side (one seed and one value block), add conv(value) + t·v[level] to
// the running sum, and correct the child as in generation using the
// correction block's t bit for that side (bit 1 for left, bit 0 for right).
// At the leaf add conv(seed with bits 0,1 cleared) + t·g. Party 1 negates.
//
// # Layout
//
// LLAMA's serializer (Peer::send_dcf_keypack) writes no header, length or
// version; Bin, Bout and Group travel out of band:
//
//	offset 0                    16 bytes      the party's root block
//	offset 16·j, j = 1..Bin     16 bytes      correction block of level j−1
//	offset 16·(Bin+1)           E·Group       g[0..Group−1]
//	then                        E·Bin·Group   v[level·Group + i], level-major
//
// where E = 1, 2, 4 or 8 bytes for Bout ≤ 8, ≤ 16, ≤ 32, ≤ 64, each value
// little-endian in its low E bytes. Only the root differs between the two
// keys of a pair. Parse is strict: the length must be exact and no value
// field may have bits at or above Bout. A LLAMA .dat file is such keys end
// to end; SplitKeys cuts one of a single shape apart.
//
// # Implementation
//
// GenBatch walks many keys down the tree together and writes
// server.dat/client.dat directly; Gen and GenKeys are GenBatch for one key,
// GenBatchParty writes one party's half (what a key-generation module
// runs). It is branch-free in the secrets (α's bits, control bits, signs
// select by mask), and Eval in the control bits. Nodes are expanded by
// expandNodes: on amd64 with AES-NI an assembly kernel that derives each
// node's AES-128 schedule on the fly next to its four encryptions, and on
// AVX-512 VAES CPUs one that expands four nodes' schedules side by side in
// the lanes of a ZMM register (both constant time, no allocation);
// elsewhere and under the purego tag crypto/aes, one cipher per node
// (whose generic code is not constant time, as Go documents).
// AppendDualDCF writes LLAMA's DualDCF key pack around a DCF key, and
// CheckPair checks a pair against β·[x < α] for tests of every layer.
// kord-v1 (package fss) is untouched by this profile.
package llama
