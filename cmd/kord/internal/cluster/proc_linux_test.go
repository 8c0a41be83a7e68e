package cluster

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSiteCPUs: the two sites' CPU sets split this process's CPUs into
// disjoint halves, and KORD_CLUSTER_PIN=0 turns pinning off.
func TestSiteCPUs(t *testing.T) {
	all := allowedCPUs()
	if len(all) < 2 {
		if siteCPUs(0) != nil || siteCPUs(1) != nil {
			t.Fatal("pinned on fewer than two CPUs")
		}
		t.Skip("one CPU: nothing to split")
	}
	s0, s1 := siteCPUs(0), siteCPUs(1)
	if len(s0) == 0 || len(s1) == 0 || !slices.Equal(append(slices.Clone(s0), s1...), all) {
		t.Fatalf("sites %v and %v do not split %v", s0, s1, all)
	}
	t.Setenv("KORD_CLUSTER_PIN", "0")
	if siteCPUs(0) != nil {
		t.Fatal("KORD_CLUSTER_PIN=0 still pins")
	}
}

// TestStartOnPins: a child started on one CPU may run on that CPU only,
// and the starting process keeps all of its CPUs.
func TestStartOnPins(t *testing.T) {
	all := allowedCPUs()
	if len(all) < 2 {
		t.Skip("one CPU")
	}
	cpu := all[len(all)-1]
	c := exec.Command("sleep", "5")
	if err := startOn(c, []int{cpu}); err != nil {
		t.Skip("cannot start sleep:", err)
	}
	defer func() { c.Process.Kill(); c.Wait() }()
	st, err := os.ReadFile("/proc/" + strconv.Itoa(c.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, l := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			got = strings.TrimSpace(v)
		}
	}
	if got != strconv.Itoa(cpu) {
		t.Fatalf("child may run on CPUs %q, want %d", got, cpu)
	}
	if now := allowedCPUs(); !slices.Equal(now, all) {
		t.Fatalf("this process's CPUs changed from %v to %v", all, now)
	}
}
