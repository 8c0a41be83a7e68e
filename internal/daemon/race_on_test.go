//go:build race

package daemon

// raceEnabled: this test binary runs under the race detector, whose shadow
// memory and allocator hooks change how the heap takes page faults.
const raceEnabled = true
