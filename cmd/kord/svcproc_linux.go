package main

import (
	"os/exec"
	"syscall"
)

// svcDetach makes a child die with its parent (Linux).
func svcDetach(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
