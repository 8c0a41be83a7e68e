package provision

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestUndumpable: after Undumpable the kernel reports the process not
// dumpable. It runs in a child, so the test binary itself stays dumpable.
func TestUndumpable(t *testing.T) {
	if os.Getenv("KORD_UNDUMPABLE_CHILD") == "1" {
		if ok, err := Undumpable(); !ok || err != nil {
			t.Fatal(ok, err)
		}
		v, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
		if err != nil || v != 0 {
			t.Fatalf("PR_GET_DUMPABLE = %d, %v", v, err)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestUndumpable$", "-test.v")
	cmd.Env = append(os.Environ(), "KORD_UNDUMPABLE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
