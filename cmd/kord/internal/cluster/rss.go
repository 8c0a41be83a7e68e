package cluster

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// PeakRSS returns the peak resident set (VmHWM, from /proc) of each
// running daemon, keyed module0, module1, party0, party1, and of this
// process as "client"; 0 where it cannot be read (not Linux, or the
// process is gone).
func (c *Cluster) PeakRSS() map[string]int64 {
	out := map[string]int64{"client": vmHWM("self")}
	for b := 0; b < 2; b++ {
		for name, p := range map[string]*Daemon{"module": c.mods[b], "party": c.parties[b]} {
			key := fmt.Sprintf("%s%d", name, b)
			out[key] = 0
			if p != nil && p.cmd.Process != nil {
				out[key] = vmHWM(strconv.Itoa(p.cmd.Process.Pid))
			}
		}
	}
	return out
}

// vmHWM reads VmHWM of /proc/<pid>/status in bytes, or 0.
func vmHWM(pid string) int64 {
	data, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
