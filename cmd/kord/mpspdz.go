package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kord-fss/kord/cmd/kord/internal/mpspdzrun"
	"github.com/kord-fss/kord/host"
	"github.com/kord-fss/kord/internal/peertls"
	"github.com/kord-fss/kord/mpspdz"
	"github.com/spf13/cobra"
)

// The mpspdz command group: MP-SPDZ semi2k preprocessing files from the
// module pair (docs/mpspdz.md).

var mpspdzCmd = &cobra.Command{
	Use:   "mpspdz",
	Short: "MP-SPDZ semi2k preprocessing (Triples, Squares, Bits, matrix triples) from the module pair",
}

var mpspdzExportCmd = &cobra.Command{
	Use: "export --dir PLAYER_DATA --triples N --squares N --bits N [--matrix MxKxN:COUNT]... [--party0 ADDR --party1 ADDR] [--player 0|1]",
	Short: "Write semi2k's 2-DR-64 files: both players' from an in-process module pair or both party daemons, " +
		"or with --player i only site i's from its own daemon",
	Args: cobra.NoArgs,
	RunE: runMpspdzExport,
}

var mpspdzVerifyCmd = &cobra.Command{
	Use:   "verify --dir PLAYER_DATA",
	Short: "Check every file's header and size and, where both players' files are present, every tuple's relation",
	Args:  cobra.NoArgs,
	RunE:  runMpspdzVerify,
}

var mpspdzBenchCmd = &cobra.Command{
	Use:   "bench [--triples N --squares N --bits N --matrix MxKxN:COUNT...] [--json]",
	Short: "Tuples/s through the five processes against an in-process dealer in the same run, and inter-site bytes per tuple",
	Args:  cobra.NoArgs,
	RunE:  runMpspdzBench,
}

func init() {
	bf := mpspdzBenchCmd.Flags()
	bf.Int("triples", 300000, "Beaver triples")
	bf.Int("squares", 100000, "squares")
	bf.Int("bits", 300000, "random bits")
	bf.StringArray("matrix", nil, "matrix triples MxKxN:COUNT; repeatable")
	bf.Int("chunk", mpspdzrun.DefaultChunk, "most scalar tuples per module request")
	bf.Int("in-flight", mpspdzrun.DefaultInFlight, "most requests outstanding at once through the daemons")
	bf.Bool("json", false, "print the report as JSON")
	mpspdzCmd.AddCommand(mpspdzBenchCmd)
}

func runMpspdzBench(cmd *cobra.Command, _ []string) error {
	items, err := exportItems(cmd)
	if err != nil {
		return err
	}
	chunk, _ := cmd.Flags().GetInt("chunk")
	asJSON, _ := cmd.Flags().GetBool("json")
	dir, err := os.MkdirTemp("", "kord-mpspdz-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	inFlight, _ := cmd.Flags().GetInt("in-flight")
	if chunk < 1 || inFlight < 1 {
		return badInput("--chunk %d, --in-flight %d: each at least 1", chunk, inFlight)
	}
	rep, err := mpspdzrun.Bench(ctx, "", dir, items, chunk, inFlight)
	if err != nil {
		return err
	}
	return writeReport(cmd.OutOrStdout(), asJSON, rep)
}

// mpspdzTLS are export's application-API credentials (the same for both
// sites' parties; the server name defaults to the asked party's).
var mpspdzTLS appTLSFlags

func init() {
	f := mpspdzExportCmd.Flags()
	mpspdzTLS.add(f)
	f.String("dir", "", "MP-SPDZ's Player-Data directory (files go under its 2-DR-64)")
	f.Int("triples", 0, "Beaver triples to write")
	f.Int("squares", 0, "squares to write")
	f.Int("bits", 0, "random bits to write")
	f.StringArray("matrix", nil, "matrix triples MxKxN:COUNT (an M×K by K×N product); repeatable")
	f.String("party0", "", "site 0's party daemon application address (with --party1, or alone with --player 0)")
	f.String("party1", "", "site 1's party daemon application address")
	f.Int("player", -1, "write only this player's files, asking only its site's daemon")
	f.Bool("force", false, "overwrite existing files")
	f.Uint64("first-id", 1, "first request id (both sites' exports must use the same)")
	f.Int("chunk", mpspdzrun.DefaultChunk, "most scalar tuples per module request")
	f.Int("in-flight", mpspdzrun.DefaultInFlight, "most requests outstanding at once through the daemons")
	f.Bool("json", false, "print the report as JSON")
	_ = mpspdzExportCmd.MarkFlagRequired("dir")
	mpspdzVerifyCmd.Flags().String("dir", "", "MP-SPDZ's Player-Data directory")
	mpspdzVerifyCmd.Flags().Bool("json", false, "print the report as JSON")
	_ = mpspdzVerifyCmd.MarkFlagRequired("dir")
	mpspdzCmd.AddCommand(mpspdzExportCmd, mpspdzVerifyCmd)
	rootCmd.AddCommand(mpspdzCmd)
}

// exportItems reads the tuple counts of kord mpspdz export.
func exportItems(cmd *cobra.Command) ([]mpspdzrun.Item, error) {
	var items []mpspdzrun.Item
	for _, s := range []struct {
		flag string
		kind mpspdz.Kind
	}{{"triples", mpspdz.Triples}, {"squares", mpspdz.Squares}, {"bits", mpspdz.Bits}} {
		n, _ := cmd.Flags().GetInt(s.flag)
		if n < 0 {
			return nil, badInput("--%s: %d is negative", s.flag, n)
		}
		if n > 0 {
			items = append(items, mpspdzrun.Item{Kind: s.kind, Count: n})
		}
	}
	ms, _ := cmd.Flags().GetStringArray("matrix")
	for _, m := range ms {
		k, n, err := mpspdz.ParseMatrixSpec(m)
		if err != nil {
			return nil, badInput("%v", err)
		}
		items = append(items, mpspdzrun.Item{Kind: k, Count: n})
	}
	if len(items) == 0 {
		return nil, badInput("nothing to export: give --triples, --squares, --bits or --matrix")
	}
	return items, nil
}

func runMpspdzExport(cmd *cobra.Command, _ []string) error {
	dir, _ := cmd.Flags().GetString("dir")
	items, err := exportItems(cmd)
	if err != nil {
		return err
	}
	addr := [2]string{}
	addr[0], _ = cmd.Flags().GetString("party0")
	addr[1], _ = cmd.Flags().GetString("party1")
	player, _ := cmd.Flags().GetInt("player")
	force, _ := cmd.Flags().GetBool("force")
	firstID, _ := cmd.Flags().GetUint64("first-id")
	chunk, _ := cmd.Flags().GetInt("chunk")
	asJSON, _ := cmd.Flags().GetBool("json")
	inFlight, _ := cmd.Flags().GetInt("in-flight")
	if chunk < 1 || inFlight < 1 {
		return badInput("--chunk %d, --in-flight %d: each at least 1", chunk, inFlight)
	}
	if firstID == 0 {
		return badInput("--first-id: ids start at 1")
	}
	o := mpspdzrun.Options{Dir: dir, Items: items, Force: force, Chunk: chunk, InFlight: inFlight}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	var src mpspdzrun.Source
	var how string
	switch {
	case player != -1 && player != 0 && player != 1:
		return badInput("--player: %d, want 0 or 1", player)
	case addr[0] == "" && addr[1] == "":
		if player != -1 {
			return badInput("--player %d needs --party%d (site %d's daemon)", player, player, player)
		}
		o.Players = [2]bool{true, true}
		pctx, cancel := context.WithTimeout(ctx, time.Minute)
		lp, err := host.NewLocalPair(pctx, host.LocalOptions{})
		cancel()
		if err != nil {
			return fmt.Errorf("in-process module pair: %w", err)
		}
		defer lp.Close()
		src, how = mpspdzrun.Local{Pair: lp}, "an in-process module pair"
	default:
		d := &mpspdzrun.Daemons{FirstID: firstID}
		for p := range 2 {
			if player != -1 && p != player {
				continue
			}
			if addr[p] == "" {
				if player == -1 {
					return badInput("--party%d: missing (give both addresses, or --player with one)", p)
				}
				return badInput("--player %d needs --party%d", p, p)
			}
			tf := mpspdzTLS
			if !cmd.Flags().Changed("app-server-name") {
				tf.server = peertls.PartyName(p)
			}
			app, err := dialApp(addr[p], tf)
			if err != nil {
				return fmt.Errorf("--party%d %s: %w", p, addr[p], err)
			}
			defer app.Close()
			d.Apps[p] = app
			o.Players[p] = true
		}
		src, how = d, "the party daemons"
		if player != -1 {
			how = fmt.Sprintf("site %d's party daemon", player)
		}
	}
	rep, err := mpspdzrun.Export(ctx, src, o)
	if err != nil {
		return err
	}
	return writeReport(cmd.OutOrStdout(), asJSON, exportText{rep, how})
}

// exportText prints an export report.
type exportText struct {
	*mpspdzrun.Report
	how string
}

func (r exportText) WriteText(w io.Writer) {
	for _, f := range r.Files {
		fmt.Fprintf(w, "%s: %d %s tuples (player %d)\n", f.Path, f.Tuples, f.Kind, f.Player)
	}
	fmt.Fprintf(w, "from %s in %d requests, %.3f s (%.0f tuples/s per player)\n", r.how, r.Requests, r.Seconds, r.TuplesPerSec)
}

// verifyReport is kord mpspdz verify's report.
type verifyReport struct {
	Dir   string              `json:"dir"`
	Files []mpspdz.FileReport `json:"files"`
	OK    bool                `json:"ok"`
}

func (r verifyReport) WriteText(w io.Writer) {
	for _, f := range r.Files {
		rel := "header and size only (the other player's file is absent)"
		if f.Checked {
			rel = "every tuple's relation holds"
		}
		fmt.Fprintf(w, "%s: %d %s tuples, %d bytes; %s\n", f.File, f.Tuples, f.Kind, f.Bytes, rel)
	}
	fmt.Fprintln(w, "ok")
}

func runMpspdzVerify(cmd *cobra.Command, _ []string) error {
	dir, _ := cmd.Flags().GetString("dir")
	asJSON, _ := cmd.Flags().GetBool("json")
	files, err := mpspdz.Verify(dir)
	if err != nil {
		return err
	}
	return writeReport(cmd.OutOrStdout(), asJSON, verifyReport{Dir: dir, Files: files, OK: true})
}
