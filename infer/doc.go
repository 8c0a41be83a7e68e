// Package infer evaluates a fixed-point feed-forward network between two
// parties — the model owner (party 0, the weights) and the client (party
// 1, the input) — so that the client learns the output wire (the logits)
// and nothing else, and the owner learns nothing, with every piece of
// correlated randomness supplied by kord's paired key-generation modules.
//
// # Arithmetic
//
// A Model works in the ring Z_{2^ℓ} (Model.Ring) with f fractional bits
// (Model.Frac): a real v is the two's-complement integer round(v·2^f).
// Weights carry f fractional bits, biases 2f (they are added to products of
// two f-bit values), and the model lists its own truncations. The layers:
//
//   - FC: y[o] = Σ_i W[o][i]·x[i] + B[o];
//   - Conv: 2-D convolution, stride 1, no padding, weights [co][ci][kh][kw];
//   - ReLU: max(x, 0) on the two's-complement value;
//   - MaxPool K: K×K windows, stride K, as the tree max(a, b) = b + ReLU(a−b)
//     over each window in row-major order, pairwise per level;
//   - Trunc S: the exact arithmetic shift x >> S of the signed value;
//   - Flatten: a no-op on the C-major layout.
//
// Model.Ref is the cleartext reference with exactly these semantics (all
// arithmetic mod 2^ℓ, read as signed where a layer needs a sign). It is the
// truth: the secure evaluation equals it bit for bit on every input, also
// where a value wraps. RefStats.Overflow counts values whose exact integer
// did not fit the ring (0 for the committed models on all 10,000 MNIST
// test images), so on those inputs ring and integer arithmetic agree.
//
// # Protocol (masked wires, semi-honest)
//
// Between layers each party holds an additive share of the wire in
// Z_{2^ℓ}. Every layer begins by opening its input under masks it alone
// uses: the parties send their shares plus their shares of a fresh random
// mask r, and both learn x̂ = x + r (LLAMA's masked wire). One round per
// layer, one frame for the whole layer, values bit-packed to ℓ bits.
//
//   - Linear (FC, Conv), bilinear map L: a session draws each layer's
//     weight mask A once and opens the weights once, Ŵ = W + A (the
//     owner's weights enter as its share, the client's share is 0). Per
//     evaluation a fresh input mask R and Z = L(A, R) in shares: open
//     x̂ = x + R; y_b = L(Ŵ, [b=0]·x̂ − R_b) − L(A_b, x̂) + Z_b + [b=0]·B,
//     since L(Ŵ−A, x̂−R) = L(Ŵ,x̂) − L(Ŵ,R) − L(A,x̂) + L(A,R).
//   - ReLU: two derived DCF(ℓ→ℓ) keys, F at r1 (β = 1) and G at r2 with a
//     derived random payload s; open x + r1, x + r2, x + s; d = DReLU(x)
//     from F and d·s from G by the comparison identity of docs/gates.md;
//     ReLU = (x+s)·d − d·s. No bound key: zero bytes between the sites.
//   - MaxPool: ⌈log2 K²⌉ rounds of batched ReLU on differences.
//   - Trunc by s: with y = x + 2^{ℓ−1} in shares read as integers,
//     ⌊y/2^s⌋ = ⌊y_0/2^s⌋ + ⌊y_1/2^s⌋ + c − 2^{ℓ−s}·w for the low-bit carry
//     c and the wrap w of the shares, both public comparisons of exactly
//     shared sums, opened together: one round, two derived keys, exact on
//     the whole ring (ℓ ≤ 63; at ℓ = 64 gates.TR and a ring lift, two
//     rounds). No probabilistic truncation, no 1-bit error.
//   - Output: the owner sends its shares of the last wire to the client.
//
// # Material
//
// NewSupply draws a session's weight masks (one Session per party) and
// Supply.Gen one Material per evaluation from Sources: FSS keys from a
// gates.KeySource (gates.ModuleSource: a paired module pair, every key
// derived) and linear correlations from a CorrSource (ModuleCorr: the
// modules' derived-correlation request, msg.SubmitCorrelation, parts
// CorrWeight and CorrInput). Material is single-use: Eval marks it used
// before sending anything and wipes it after, so no mask ever opens two
// values (A opens only Ŵ, once per session). DealerCorr and
// gates.DealerSource are the TRUSTED-DEALER BASELINE (the LLAMA route),
// kept for comparison; the runners (cmd/kord/internal/inferdemo:
// DealerLink, Demo, ResNetDemo, the online parties as processes) deploy
// it as LLAMA does, shipping each party its encoded material
// (Material.MarshalBinary, ParseMaterial) over its own shaped link, and
// measure both key supplies per image. This package starts no processes
// and shapes no links.
//
// # Residual networks and streaming
//
// layers2.go adds strided and padded convolution and max-pool, average
// pool, residual slots (save, swap, add: local on shares) and
// space-to-depth; Lower turns every strided or padded convolution into a
// space-to-depth and a stride-1 Conv, so the modules' correlations apply
// unchanged. resnet.go builds ResNet-18 (ImageNet shape or reduced) with
// seeded weights; RunStream (stream.go) evaluates any model with its
// material drawn step by step (bounded memory, optionally overlapped with
// the online phase), and KeyInventory counts it per layer.
//
// docs/inference.md has the per-layer inventory, the security argument
// and the measured costs.
package infer
