package main

import (
	"os"
	"runtime/debug"
	"runtime/pprof"
)

// svcTuneGC trades memory for CPU in the daemons: their heaps are small
// and short-lived (frames, key shares), so collecting at 4× the live heap
// instead of 2× saves a tenth of their CPU. GOGC, if set, wins.
func svcTuneGC() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(400)
	}
}

// svcProfile starts a CPU profile when KORD_CPUPROFILE_DIR is set (for
// performance work on the daemons); the returned func stops it.
func svcProfile(name string) func() {
	svcTuneGC()
	dir := os.Getenv("KORD_CPUPROFILE_DIR")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(dir + "/" + name + ".pprof")
	if err != nil {
		return func() {}
	}
	pprof.StartCPUProfile(f)
	return func() { pprof.StopCPUProfile(); f.Close() }
}
