//go:build !linux

package main

import "os/exec"

func svcDetach(*exec.Cmd) {}
