package prg

import (
	"fmt"
	"sort"
)

// A Kernel is one implementation of the batched MMO hash.
type Kernel struct {
	// Name identifies the kernel, e.g. "generic", "aesni", "vaes256".
	Name string
	// hash2 sets a[i] = MMO(K_la, in[i]) and, when la != lb,
	// b[i] = MMO(K_lb, in[i]). When la == lb only a is written.
	hash2 func(la, lb Lane, a, b, in []Block)
	// hash4 sets sl, sr, vl, vr [i] to MMO of in[i] under the four lanes
	// K_sL, K_sR, K_vL, K_vR. Any one output may alias in.
	hash4 func(sl, sr, vl, vr, in []Block)
	// tree expands folded tree nodes (see ExpandTree); nil means the
	// portable version on hash2.
	tree func(out, in []Block, cwL, cwR *Block)
	// leaves is tree for the last level (see ExpandTreeLeaves); nil means
	// the portable version.
	leaves func(out []uint64, in []Block, cwL, cwR *Block, final, negb, mask uint64)
	// dpfGen is the fused DPF Gen level (see DPFGenLevel), nil if none.
	dpfGen func(quads []Block, alpha []uint64, shift uint, out []byte, stride, cwOff, ctrlOff int, ctrlShift uint, roots bool)
	// hash2f is hash2 (two distinct lanes) on inputs with bit 0 of byte 0
	// cleared (see ExpandValuesFolded); nil means the portable version.
	hash2f func(la, lb Lane, a, b, in []Block)
	// raw sets out[i] = AES(k, in[i]) XOR in[i] for an arbitrary schedule.
	raw func(k *Schedule, out, in []Block)
	// priority orders the available kernels; the highest is the default.
	priority int
}

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
	register(Kernel{Name: "generic", hash2: genericHash2, hash4: genericHash4, raw: genericRaw, priority: 0})
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
