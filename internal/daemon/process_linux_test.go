package daemon

import (
	"runtime"
	"runtime/debug"
	"syscall"
	"testing"
)

// minorFaults is this process's count of minor page faults so far.
func minorFaults(t *testing.T) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Minflt
}

// TestPrefaultMapsHeap checks what --prefault-heap is for: after
// Prefault, growing the heap into the prefaulted size takes (almost) no
// page faults, where the same growth on a heap whose free pages went back to
// the OS faults in every page.
func TestPrefaultMapsHeap(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory takes its own page faults")
	}
	// No collection while the heap grows: one would reset the scavenger's
	// goal to the small heap of a test binary and race it against grow.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	const pieces, size = 256, 64 << 10 // 16 MiB
	grow := func() int64 {
		before := minorFaults(t)
		keep := make([][]byte, 0, pieces)
		for range pieces {
			b := make([]byte, size)
			for j := 0; j < len(b); j += 4096 {
				b[j] = 1
			}
			keep = append(keep, b)
		}
		runtime.KeepAlive(keep)
		return minorFaults(t) - before
	}
	debug.FreeOSMemory()
	cold := grow()
	if cold < pieces*size/4096/2 {
		t.Skipf("growing the heap by 16 MiB took %d faults here (huge pages?): nothing to measure", cold)
	}
	debug.FreeOSMemory()
	Prefault(32)
	warm := grow()
	t.Logf("faults growing the heap by 16 MiB: %d cold, %d after Prefault(32)", cold, warm)
	if warm > cold/4 {
		t.Errorf("after Prefault(32), growing the heap by 16 MiB took %d page faults (%d without it)", warm, cold)
	}
}
