package main

import (
	"os/exec"
	"syscall"
	"time"
)

// svcDetach makes a child die with its parent (Linux).
func svcDetach(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

// selfCPU is the user and system CPU time this process has used so far.
func selfCPU() time.Duration {
	var r syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &r) != nil {
		return 0
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}
