package daemon

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
)

// TestReadyRoundTrip: what Ready writes, ParseReady reads back, values as
// strings; other lines are not readiness records.
func TestReadyRoundTrip(t *testing.T) {
	var b bytes.Buffer
	Ready(&b, "app", "127.0.0.1:7300", "pid", 42)
	if b.String() != `{"ready":true,"app":"127.0.0.1:7300","pid":"42"}`+"\n" {
		t.Fatalf("Ready wrote %q", b.String())
	}
	kv, err := ParseReady(b.String())
	if err != nil || kv["app"] != "127.0.0.1:7300" || kv["pid"] != "42" || kv["ready"] != "true" {
		t.Fatalf("ParseReady: %v %v", kv, err)
	}
	for _, bad := range []string{"", "listening 127.0.0.1:1\n", `{"ready":false}`, `{"app":"x"}`} {
		if _, err := ParseReady(bad); err == nil {
			t.Errorf("ParseReady(%q) accepted", bad)
		}
	}
}

// TestConfigurePrecedence: flag > environment > file > default, and an
// unknown setting in the file is a UsageError.
func TestConfigurePrecedence(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "kord.conf")
	os.WriteFile(conf, []byte("# a comment\nbatch = 7\nwindow = 9\nname = \"file\"\n"), 0o600)
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	CommonFlags(fs)
	batch, window, inFlight := fs.Int("batch", 1, ""), fs.Int("window", 1, ""), fs.Int("in-flight", 1, "")
	name := fs.String("name", "default", "")
	if err := fs.Parse([]string{"--config", conf, "--batch", "5"}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KORD_WINDOW", "8")
	if err := Configure(fs); err != nil {
		t.Fatal(err)
	}
	if *batch != 5 || *window != 8 || *name != "file" || *inFlight != 1 {
		t.Fatalf("batch %d window %d name %q in-flight %d", *batch, *window, *name, *inFlight)
	}
	os.WriteFile(conf, []byte("nonsense = 1\n"), 0o600)
	fs = pflag.NewFlagSet("t", pflag.ContinueOnError)
	CommonFlags(fs)
	fs.Parse([]string{"--config", conf})
	var ue UsageError
	if err := Configure(fs); !errors.As(err, &ue) {
		t.Fatalf("unknown setting: %v, want a UsageError", err)
	}
}
