//go:build !unix

package host

import "time"

// cpuTime is unknown here: the benchmark reports no CPU ratio.
func cpuTime() time.Duration { return 0 }
