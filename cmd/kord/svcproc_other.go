//go:build !linux

package main

import (
	"os/exec"
	"time"
)

func svcDetach(*exec.Cmd) {}

// selfCPU is not measured here (0): the CPU fields of the demo report are 0.
func selfCPU() time.Duration { return 0 }
