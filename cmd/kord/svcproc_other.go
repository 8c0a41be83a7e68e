//go:build !linux

package main

import (
	"os/exec"
	"time"
)

func svcDetach(*exec.Cmd) {}

// selfCPU is not measured here (0): the CPU fields of the demo report are 0.
func selfCPU() time.Duration { return 0 }

// allowedCPUs is not known here: the cluster's daemons are not pinned.
func allowedCPUs() []int { return nil }

// svcStartOn starts c (CPU affinity is not set on this platform).
func svcStartOn(c *exec.Cmd, _ []int) error { return c.Start() }
