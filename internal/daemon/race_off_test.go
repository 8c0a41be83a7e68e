//go:build !race

package daemon

// raceEnabled: this test binary runs under the race detector.
const raceEnabled = false
