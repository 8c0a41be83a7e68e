package cluster

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStartDaemon: a child that prints a readiness record is ready with
// its key-value pairs and stops on request; one that prints anything else
// fails to start, and the error carries the tail of its log.
func TestStartDaemon(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	p, err := StartDaemon(ctx, 0, sh, "fake", filepath.Join(dir, "fake.log"),
		"-c", `echo '{"ready":true,"app":"127.0.0.1:1","pid":"7"}'; exec sleep 30`)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "fake" || p.Ready["app"] != "127.0.0.1:1" || p.Ready["pid"] != "7" || p.Pid() <= 0 {
		t.Fatalf("daemon %q ready %v pid %d", p.Name, p.Ready, p.Pid())
	}
	stopped := make(chan struct{})
	go func() { p.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return")
	}

	_, err = StartDaemon(ctx, 1, sh, "broken", filepath.Join(dir, "broken.log"),
		"-c", `echo "no such flag" >&2; echo 'usage: broken'`)
	if err == nil || !strings.Contains(err.Error(), "broken did not start") || !strings.Contains(err.Error(), "no such flag") {
		t.Fatalf("a daemon without a readiness record: %v", err)
	}
}
