// Package daemon is the start-up the kord daemons (kord module, kord
// party) share: settings from flags, environment and an optional config
// file, the JSON logger, the one-line readiness record a supervisor reads
// (cmd/kord/internal/cluster), the process tuning (garbage collector, heap
// prefault, CPU profile, gRPC server options), the module's state file and
// provisioning secret, and the party's peer-link TLS and listeners.
package daemon

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// A UsageError is bad input from the operator: a flag, environment
// variable or config-file setting out of range. kord exits with status 2
// for it.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// BadInput wraps a formatted message as a UsageError.
func BadInput(format string, args ...any) error {
	return UsageError{fmt.Errorf(format, args...)}
}

// Configure fills the flags of a daemon command that were not given on
// the command line: first from the environment (KORD_<FLAG>, dashes as
// underscores, e.g. KORD_STATE), then from the optional --config file
// (lines "flag = value", # comments). Precedence: flag > environment >
// file > default.
func Configure(fs *pflag.FlagSet) error {
	file := map[string]string{}
	if path, _ := fs.GetString("config"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			return BadInput("--config: %v", err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				return BadInput("--config %s:%d: want \"flag = value\"", path, n)
			}
			k, v = strings.TrimSpace(k), strings.Trim(strings.TrimSpace(v), `"`)
			if fs.Lookup(k) == nil || k == "config" {
				return BadInput("--config %s:%d: unknown setting %q", path, n, k)
			}
			file[k] = v
		}
		if err := sc.Err(); err != nil {
			return BadInput("--config: %v", err)
		}
	}
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == "help" {
			return
		}
		env := "KORD_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = BadInput("%s: %v", env, e)
			}
			return
		}
		if v, ok := file[f.Name]; ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = BadInput("--config %s: %v", f.Name, e)
			}
		}
	})
	return err
}

// Logger returns a JSON slog logger on stderr at the given level.
func Logger(level string, attrs ...any) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, BadInput("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l})).With(attrs...), nil
}

// CommonFlags adds --config and --log-level.
func CommonFlags(fs *pflag.FlagSet) {
	fs.String("config", "", "optional config file of \"flag = value\" lines (environment KORD_<FLAG> and flags take precedence)")
	fs.String("log-level", "info", "log level: debug, info, warn, error")
}

// Ready writes the one-line JSON readiness record a supervisor (kord
// demo, kord chaos, the CLI tests: cmd/kord/internal/cluster) reads from a daemon's
// stdout: {"ready":true,"k1":"v1",...}, every value as a string, for the
// key-value pairs kv.
func Ready(w io.Writer, kv ...any) {
	var b strings.Builder
	b.WriteString(`{"ready":true`)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, `,%q:%q`, kv[i], fmt.Sprint(kv[i+1]))
	}
	b.WriteString("}\n")
	fmt.Fprint(w, b.String())
}

// ParseReady reads a readiness record written by Ready: its key-value
// pairs, every value as a string, or an error if line is not one.
func ParseReady(line string) (map[string]string, error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		return nil, fmt.Errorf("not a readiness record: %w", err)
	}
	if m["ready"] != true {
		return nil, errors.New(`not a readiness record: no "ready":true`)
	}
	kv := make(map[string]string, len(m))
	for k, v := range m {
		kv[k] = fmt.Sprint(v)
	}
	return kv, nil
}

// Common is what every daemon command reads first, checked in this
// order: its flags filled in (Configure), --prefault-heap, --log-level.
type Common struct {
	LogLevel    string
	PrefaultMiB int
}

// ReadCommon fills fs's unset flags (Configure) and returns the settings
// every daemon shares, a bad --log-level reported before the command's
// other flags.
func ReadCommon(fs *pflag.FlagSet) (Common, error) {
	if err := Configure(fs); err != nil {
		return Common{}, err
	}
	mib, err := PrefaultMiB(fs)
	if err != nil {
		return Common{}, err
	}
	lvl, _ := fs.GetString("log-level")
	if _, err := Logger(lvl); err != nil {
		return Common{}, err
	}
	return Common{LogLevel: lvl, PrefaultMiB: mib}, nil
}
