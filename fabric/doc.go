// Package fabric models the GGM key-generation fabric of a KORD-style
// engine: M in-flight key slots sharing W pipelined AES-MMO lanes.
//
// It has two halves that are meant to be read side by side.
//
// The simulator ([Simulate]) is cycle-level: every lane is an 11-stage
// pipeline with initiation interval 1, the scheduler needs one more cycle of
// turnaround to consume a level's results (so a slot can issue its next level
// Leff = 12 cycles after the previous one), and a first-come-first-served
// scheduler grants, each cycle, the slot that has waited longest for its
// next complete level of c AES calls (4 for a DPF level, 8 for a DCF level).
// Keys of ℓ levels are admitted from a request stream into free slots, one
// cycle after the slot's previous key retires.
//
// The analytical model ([Model]) is KORD's closed form: a single chain keeps
// c/(W·Leff) of the lanes busy, the array saturates at M* = W·Leff/c keys in
// flight, and past the knee keys/s = fmax·W/(c·ℓ), whatever the pipeline
// depth. [Model.StreamUtilization] adds the finite-stream terms (warm-up,
// the admission cycle per key, the partial last generation, drain) that the
// published cycle-accurate figures include, and [FitLaw] recovers lanes and
// latency from measured (M, rate) pairs so that the same law can be fitted
// to a software batch engine.
//
// [Sweep], [PublishedRates] and [MixedCapacity] reproduce KORD's published
// figures; docs/fabric.md explains each one and every residual.
//
// The package imports nothing else of kord.
package fabric
