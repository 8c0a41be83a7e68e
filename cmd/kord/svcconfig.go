package main

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// svcConfigure fills the flags of a service command that were not given on
// the command line: first from the environment (KORD_<FLAG>, dashes as
// underscores, e.g. KORD_STATE), then from the optional --config file
// (lines "flag = value", # comments). Precedence: flag > environment >
// file > default.
func svcConfigure(cmd *cobra.Command) error {
	fs := cmd.Flags()
	file := map[string]string{}
	if path, _ := fs.GetString("config"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			return badInput("--config: %v", err)
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
				return badInput("--config %s:%d: want \"flag = value\"", path, n)
			}
			k, v = strings.TrimSpace(k), strings.Trim(strings.TrimSpace(v), `"`)
			if fs.Lookup(k) == nil || k == "config" {
				return badInput("--config %s:%d: unknown setting %q", path, n, k)
			}
			file[k] = v
		}
		if err := sc.Err(); err != nil {
			return badInput("--config: %v", err)
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
				err = badInput("%s: %v", env, e)
			}
			return
		}
		if v, ok := file[f.Name]; ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = badInput("--config %s: %v", f.Name, e)
			}
		}
	})
	return err
}

// svcLogger returns a JSON slog logger on stderr at the given level.
func svcLogger(level string, attrs ...any) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, badInput("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l})).With(attrs...), nil
}

// svcCommonFlags adds --config and --log-level.
func svcCommonFlags(cmd *cobra.Command) {
	cmd.Flags().String("config", "", "optional config file of \"flag = value\" lines (environment KORD_<FLAG> and flags take precedence)")
	cmd.Flags().String("log-level", "info", "log level: debug, info, warn, error")
}

// svcReady prints the one-line JSON readiness record a supervisor (kord
// demo, the fault tests) reads from stdout.
func svcReady(cmd *cobra.Command, kv ...any) {
	var b strings.Builder
	b.WriteString(`{"ready":true`)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, `,%q:%q`, kv[i], fmt.Sprint(kv[i+1]))
	}
	b.WriteString("}\n")
	fmt.Fprint(cmd.OutOrStdout(), b.String())
}
