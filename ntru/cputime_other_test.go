//go:build !linux

package ntru

import "testing"

// cpuLoop runs f in a b.Loop (the CPU-time metric is Linux-only).
func cpuLoop(b *testing.B, f func()) {
	for b.Loop() {
		f()
	}
}
