package prg

import (
	"fmt"
	"sort"
)

// A Kernel is one implementation of the batched MMO hash.
//
// Kernels are dispatched with a switch over their id and direct calls (see
// the dispatch functions below and archHash2 & co. in the per-architecture
// files), not through function values: a call through a function value
// makes every buffer passed to it escape to the heap, and the single-key
// paths pass stack buffers on every level.
type Kernel struct {
	// Name identifies the kernel: "generic", "aesni", "vaes256", "vaes512".
	Name string
	id   kernelID
	// priority orders the available kernels; the highest is the default.
	priority int
}

// kernelID names the implementations the dispatch switches know.
type kernelID uint8

const (
	kGeneric kernelID = iota // crypto/aes, one block per call
	kAESNI                   // SSE AES-NI assembly
	kVAES                    // VAES on YMM assembly, with the fused kernels
	kVAES512                 // VAES on ZMM (AVX-512) assembly
)

var (
	registry []Kernel
	active   Kernel
)

// register adds a kernel that this machine can run. Called from init.
func register(k Kernel) {
	registry = append(registry, k)
	sort.SliceStable(registry, func(i, j int) bool { return registry[i].priority > registry[j].priority })
	active = registry[0]
}

func init() {
	register(Kernel{Name: "generic", id: kGeneric, priority: 0})
}

// Kernels lists the names of the kernels this machine can run, fastest first.
func Kernels() []string {
	names := make([]string, len(registry))
	for i, k := range registry {
		names[i] = k.Name
	}
	return names
}

// Active returns the name of the kernel in use.
func Active() string { return active.Name }

// Use selects a kernel by name. It is meant for start-up, tests and
// benchmarks; it must not race with hashing in other goroutines.
func Use(name string) error {
	for _, k := range registry {
		if k.Name == name {
			active = k
			return nil
		}
	}
	return fmt.Errorf("prg: no kernel %q on this machine (have %v)", name, Kernels())
}

// EachKernel makes each kernel this machine can run the active one in
// turn, fastest first, calls f with its name, and then restores the kernel
// that was active. Like Use, it is meant for tests and benchmarks (see
// prgtest.Run) and must not race with hashing in other goroutines.
func EachKernel(f func(name string)) {
	saved := active
	defer func() { active = saved }()
	for _, k := range registry {
		active = k
		f(k.Name)
	}
}

// The dispatch functions. Each runs the active kernel's implementation of
// one operation, falling back to the portable one when the architecture
// file has none (archX reports false).

// hash2 sets a[i] = MMO(K_la, in[i]) and, when la != lb,
// b[i] = MMO(K_lb, in[i]). When la == lb only a is written.
func hash2(la, lb Lane, a, b, in []Block) {
	if !archHash2(active.id, la, lb, a, b, in) {
		genericHash2(la, lb, a, b, in)
	}
}

// hash4 sets sl, sr, vl, vr [i] to MMO of in[i] under the four lanes.
func hash4(sl, sr, vl, vr, in []Block) {
	if !archHash4(active.id, sl, sr, vl, vr, in) {
		genericHash4(sl, sr, vl, vr, in)
	}
}

// raw sets out[i] = AES(k, in[i]) XOR in[i] for an arbitrary schedule.
func raw(k *Schedule, out, in []Block) {
	if !archRaw(active.id, k, out, in) {
		genericRaw(k, out, in)
	}
}
