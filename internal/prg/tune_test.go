package prg

import (
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

func threadCPU() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3 /* CLOCK_THREAD_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

func TestTuneDPFGen(t *testing.T) {
	if !HasDPFGenLevel() {
		t.Skip()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const n, stride = 64, 546
	in := make([]Block, 256)
	l, r := make([]Block, 256), make([]Block, 256)
	t0 := threadCPU()
	for range 20000 {
		ExpandSeeds(l, r, in)
	}
	kern := float64(20000*512) / (threadCPU() - t0).Seconds()
	pairs := make([]Block, 2*n)
	alpha := make([]uint64, n)
	for i := range alpha {
		alpha[i] = uint64(i * 7919)
	}
	out := make([]byte, n*stride)
	t0 = threadCPU()
	for it := range 20000 {
		DPFGenLevel(pairs, alpha, uint(it%32), out, stride, 22+16*(it%32), 22+16*32+(it%32)/4, uint(2*(it%4)), false)
	}
	fused := float64(20000*n*4) / (threadCPU() - t0).Seconds()
	t.Logf("kernel %.3g blocks/s, fused DPF level %.3g blocks/s, ratio %.3f", kern, fused, fused/kern)
}
