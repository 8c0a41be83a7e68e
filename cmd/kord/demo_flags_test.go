package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/kord-fss/kord/cmd/kord/internal/demo"
	"github.com/kord-fss/kord/service"
)

// TestDemoFlagsValidated: every flag of `kord demo` is checked on both
// paths (in process and the five processes): a bad value exits 2 with an
// error naming the flag (and, for --kem, the allowed values).
func TestDemoFlagsValidated(t *testing.T) {
	for _, path := range [][]string{nil, {"--in-process"}} {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--kem", "no-such-kem"}, "--kem"},
			{[]string{"--keys", "0"}, "--keys"},
			{[]string{"--batch", "0"}, "--batch"},
			{[]string{"--batch", "5000"}, "--batch"},
			{[]string{"--in-flight", "0"}, "--in-flight"},
			{[]string{"--in-flight", "2000"}, "--in-flight"},
		} {
			args := append(append([]string{"demo", "--keys", "10"}, path...), c.args...)
			_, errOut, code := runKord(t, args...)
			if code != 2 || !strings.Contains(errOut, c.want) {
				t.Errorf("kord %v: exit %d, want 2 and an error naming %s: %s", args, code, c.want, errOut)
			}
			if c.want == "--kem" && !strings.Contains(errOut, "mlkem768") {
				t.Errorf("kord %v: the error does not list the KEMs: %s", args, errOut)
			}
		}
	}
	// --in-flight is the parties' outstanding batches: the in-process hosts
	// have none.
	if _, errOut, code := runKord(t, "demo", "--in-process", "--keys", "10", "--in-flight", "4"); code != 2 || !strings.Contains(errOut, "--in-flight") {
		t.Errorf("demo --in-process --in-flight 4: exit %d: %s", code, errOut)
	}
}

// TestDemoBatchAndInFlight: without --in-process, --batch is the parties'
// keys per batch and --in-flight their outstanding batches, and the
// daemons' CPU per key covers the streams only.
func TestDemoBatchAndInFlight(t *testing.T) {
	// Enough keys that the daemons' CPU, read in 10 ms clock ticks from
	// /proc, is not zero on a fast path.
	out, errOut, code := runKord(t, "demo", "--keys", "3200", "--batch", "32", "--in-flight", "2", "--json")
	if code != 0 {
		t.Fatalf("kord demo: exit %d\n%s", code, errOut)
	}
	var rep demo.ProcessReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Batch != 32 || rep.InFlight != 2 || rep.PairsFailed != 0 || rep.PairsVerified < 3200 {
		t.Fatalf("demo: batch %d, in flight %d, %d verified, %d failed", rep.Batch, rep.InFlight, rep.PairsVerified, rep.PairsFailed)
	}
	if runtime.GOOS == "linux" && !(rep.DaemonCPUPerKey > 0) {
		t.Errorf("daemon_cpu_us_per_key %v, want > 0", rep.DaemonCPUPerKey)
	}
	out, errOut, code = runKord(t, "demo", "--in-process", "--keys", "200", "--batch", "16", "--json")
	if code != 0 {
		t.Fatalf("kord demo --in-process: exit %d\n%s", code, errOut)
	}
	var ip demo.InProcessReport
	if err := json.Unmarshal([]byte(out), &ip); err != nil {
		t.Fatal(err)
	}
	if ip.Batch != 16 || ip.PairsFailed != 0 || ip.PairsVerified != 200 {
		t.Fatalf("demo --in-process: batch %d, %d verified, %d failed", ip.Batch, ip.PairsVerified, ip.PairsFailed)
	}
}

// TestDemoBatchFollowsLink: without --batch the demo batches as kord party
// does by its link: up to service.DefaultBatchSameHost keys on the Unix
// sockets, service.DefaultBatch over TCP and in process; a --batch given
// is kept.
func TestDemoBatchFollowsLink(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"--app-link", "unix"}, service.DefaultBatchSameHost},
		{[]string{"--app-link", "tcp"}, service.DefaultBatch},
		{[]string{"--app-link", "unix", "--batch", "64"}, 64},
	} {
		out, errOut, code := runKord(t, append([]string{"demo", "--keys", "200", "--json"}, c.args...)...)
		if code != 0 {
			t.Fatalf("kord demo %v: exit %d\n%s", c.args, code, errOut)
		}
		var rep demo.ProcessReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Batch != c.want || rep.PairsFailed != 0 {
			t.Errorf("kord demo %v: batch %d, want %d; %d failed", c.args, rep.Batch, c.want, rep.PairsFailed)
		}
	}
	out, errOut, code := runKord(t, "demo", "--in-process", "--keys", "50", "--json")
	if code != 0 {
		t.Fatalf("kord demo --in-process: exit %d\n%s", code, errOut)
	}
	var ip demo.InProcessReport
	if err := json.Unmarshal([]byte(out), &ip); err != nil {
		t.Fatal(err)
	}
	if ip.Batch != service.DefaultBatch {
		t.Errorf("kord demo --in-process: batch %d, want %d", ip.Batch, service.DefaultBatch)
	}
}
