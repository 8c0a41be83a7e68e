//go:build !linux

package cluster

import (
	"errors"
	"os/exec"
	"time"
)

func detach(*exec.Cmd) {}

// SelfCPU is not measured here (0): the CPU fields of the demo report are 0.
func SelfCPU() time.Duration { return 0 }

// allowedCPUs is not known here: the cluster's daemons are not pinned.
func allowedCPUs() []int { return nil }

// startOn starts c (CPU affinity is not set on this platform).
func startOn(c *exec.Cmd, _ []int) error { return c.Start() }

// procCPU is not measured here: daemon_cpu_us_per_key is 0.
func procCPU(int) (time.Duration, error) { return 0, errors.New("no /proc on this platform") }
