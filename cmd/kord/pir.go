package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/doram"
	"github.com/kord-fss/kord/host"
	"github.com/kord-fss/kord/internal/daemon"
	"github.com/kord-fss/kord/pir"
)

func init() {
	p := &cobra.Command{
		Use:   "pir",
		Short: "Two-server private information retrieval over type 0x03 DPF keys",
	}
	p.AddCommand(pirServeCmd(), pirQueryCmd(), pirMkdbCmd(), pirInfoCmd())
	rootCmd.AddCommand(p)
	benchCmd.AddCommand(benchPIRCmd(), benchDORAMCmd())
}

// benchDORAMCmd is `kord bench doram`.
func benchDORAMCmd() *cobra.Command {
	var (
		widths  []int
		stash   int
		source  string
		asJSON  bool
		minTime time.Duration
	)
	cmd := &cobra.Command{
		Use:   "doram [--bits 16,20] [--stash K] [--source module|dealer] [--json]",
		Short: "DORAM key supply vs consumption: key pairs/s the source generates vs key pairs/s the accesses use",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if stash < 0 {
				return badInput("--stash %d must not be negative", stash)
			}
			if minTime < 0 {
				return badInput("--min-time %v must not be negative", minTime)
			}
			var src doram.KeySource
			switch source {
			case "dealer":
				src = doram.DealerSource{}
			case "module":
				lp, err := host.NewLocalPair(cmd.Context(), host.LocalOptions{})
				if err != nil {
					return err
				}
				defer lp.Close()
				src = doram.ModuleSource{Pair: lp}
			default:
				return badInput("--source %q: want module or dealer", source)
			}
			var all []*doram.Rates
			for _, d := range widths {
				if d < 1 || d > 24 {
					return badInput("--bits %d is outside 1..24", d)
				}
				r, err := doram.Measure(cmd.Context(), d, stash, src, minTime)
				if err != nil {
					return err
				}
				all = append(all, r)
				if !asJSON {
					fmt.Fprintf(cmd.OutOrStdout(), "doram d=%d source=%s stash=%d: supplied %.0f key pairs/s, consumed %.0f key pairs/s (%.1f accesses/s), supply/consumption %.2f\n",
						r.D, r.Source, r.Stash, r.SuppliedPerSec, r.ConsumedPerSec, r.AccessesPerSec, r.Ratio)
				}
			}
			if asJSON {
				return writeIndented(cmd.OutOrStdout(), all)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntSliceVar(&widths, "bits", []int{16, 20}, "address widths d")
	f.IntVar(&stash, "stash", 16, "stash entries during the timed accesses")
	f.StringVar(&source, "source", "module", "key source: module (dealerless, bound mode) or dealer")
	f.DurationVar(&minTime, "min-time", time.Second, "time each side at least this long")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// pirServeCmd is `kord pir serve`.
func pirServeCmd() *cobra.Command {
	var (
		dbPath, listen    string
		workers, maxBatch int
		noVerify, verbose bool
	)
	cmd := &cobra.Command{
		Use:   "serve --db FILE --listen ADDR",
		Short: "Serve a PIR database (one of the two servers); prints the daemons' readiness record ({\"ready\":true,\"addr\":ADDR,...}) when ready",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dbPath == "" {
				return badInput("--db is required")
			}
			if workers < 0 || maxBatch < 0 {
				return badInput("--workers %d and --max-batch %d must not be negative (0: the default)", workers, maxBatch)
			}
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			db, err := pir.Open(dbPath, !noVerify)
			if err != nil {
				if errors.Is(err, os.ErrNotExist) || errors.Is(err, pir.ErrHeader) || errors.Is(err, pir.ErrFileLength) ||
					errors.Is(err, pir.ErrRecordSize) || errors.Is(err, pir.ErrCount) || errors.Is(err, pir.ErrHash) {
					return badInput("--db: %v", err)
				}
				return err
			}
			defer db.Close()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return badInput("--listen %s: %v", listen, err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			srv := pir.NewServer(db, workers, maxBatch, log)
			info := srv.Info()
			log.Info("pir server", "db", dbPath, "records", info.Count, "record_size", info.RecordSize,
				"hash", info.Hash, "domain_bits", info.DomainBits, "addr", ln.Addr().String())
			daemon.Ready(cmd.OutOrStdout(), "addr", ln.Addr().String(), "pid", os.Getpid())
			return srv.Serve(ctx, ln)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dbPath, "db", "", "database file (kord pir mkdb writes one)")
	f.StringVar(&listen, "listen", "127.0.0.1:7470", "address to listen on (port 0: any free port)")
	f.IntVar(&workers, "workers", 0, "scan goroutines (0: one per CPU)")
	f.IntVar(&maxBatch, "max-batch", 256, "most keys answered in one pass over the database")
	f.BoolVar(&noVerify, "no-verify", false, "skip checking the content hash at start-up (a full read)")
	f.BoolVar(&verbose, "verbose", false, "log every pass")
	return cmd
}

// pirQueryCmd is `kord pir query`.
func pirQueryCmd() *cobra.Command {
	var (
		servers, expect string
		index           []int
		timeout         time.Duration
	)
	cmd := &cobra.Command{
		Use:   "query --servers A,B --index i [--index j ...]",
		Short: "Retrieve records privately from two PIR servers; prints each record as hex, one per line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			parts := strings.Split(servers, ",")
			if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
				return badInput("--servers wants two addresses, A,B; got %q", servers)
			}
			if len(index) == 0 {
				return badInput("--index is required")
			}
			if h, err := hex.DecodeString(expect); expect != "" && (err != nil || len(h) != 32) {
				return badInput("--expect-hash %q is not 64 hex digits", expect)
			}
			if timeout <= 0 {
				return badInput("--timeout %v must be positive", timeout)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if err := distinctServers(ctx, parts[0], parts[1]); err != nil {
				return err
			}
			c := pir.NewClient(parts[0], parts[1], nil)
			info, err := c.Info(ctx)
			if err != nil {
				return err
			}
			if expect != "" {
				if !strings.EqualFold(expect, info.Hash) {
					return fmt.Errorf("%w: --expect-hash %s, servers hold %s", pir.ErrDBChanged, expect, info.Hash)
				}
			}
			for _, i := range index {
				if i < 0 || i >= info.Count {
					return badInput("--index %d is out of range: the database has %d records", i, info.Count)
				}
			}
			recs, err := c.QueryBatch(ctx, index)
			if err != nil {
				return err
			}
			for _, r := range recs {
				fmt.Fprintln(cmd.OutOrStdout(), hex.EncodeToString(r))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&servers, "servers", "", "the two servers, host:port,host:port")
	f.IntSliceVar(&index, "index", nil, "record index (repeatable, or comma-separated)")
	f.StringVar(&expect, "expect-hash", "", "fail unless the servers hold the database with this content hash (hex)")
	f.DurationVar(&timeout, "timeout", 60*time.Second, "overall time limit")
	return cmd
}

// pirMkdbCmd is `kord pir mkdb`.
func pirMkdbCmd() *cobra.Command {
	var (
		out           string
		records, size int
		seed          uint64
	)
	cmd := &cobra.Command{
		Use:   "mkdb --out FILE --records N --record-size S [--seed X]",
		Short: "Write a database file of N pseudorandom S-byte records (deterministic in --seed); prints its hash",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return badInput("--out is required")
			}
			if records < 1 || records > pir.MaxRecords {
				return badInput("--records %d is outside 1..%d", records, pir.MaxRecords)
			}
			if size < pir.MinRecordSize || size > pir.MaxRecordSize {
				return badInput("--record-size %d is outside %d..%d", size, pir.MinRecordSize, pir.MaxRecordSize)
			}
			data := make([]byte, records*size)
			rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
			for i := 0; i < len(data); i += 8 {
				v := rng.Uint64()
				for j := 0; j < 8 && i+j < len(data); j++ {
					data[i+j] = byte(v >> (8 * j))
				}
			}
			db, err := pir.NewDB(size, data)
			if err != nil {
				return err
			}
			if err := db.WriteFile(out); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), db.HashHex())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "database file to write")
	f.IntVar(&records, "records", 1024, "number of records")
	f.IntVar(&size, "record-size", 16, "bytes per record (16..4096)")
	f.Uint64Var(&seed, "seed", 1, "content seed")
	return cmd
}

// pirInfoCmd is `kord pir info`.
func pirInfoCmd() *cobra.Command {
	var noVerify bool
	cmd := &cobra.Command{
		Use:   "info FILE",
		Short: "Print a database file's header as JSON (checking its hash unless --no-verify)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := pir.Open(args[0], !noVerify)
			if err != nil {
				return badInput("%v", err)
			}
			defer db.Close()
			s := pir.NewServer(db, 1, 1, nil)
			return writeIndented(cmd.OutOrStdout(), s.Info())
		},
	}
	cmd.Flags().BoolVar(&noVerify, "no-verify", false, "skip the content-hash check")
	return cmd
}

// benchPIRCmd is `kord bench pir`.
func benchPIRCmd() *cobra.Command {
	var (
		cfg     pir.BenchConfig
		asJSON  bool
		minTime time.Duration
	)
	cmd := &cobra.Command{
		Use:   "pir --records R --record-size S --batch B [--json]",
		Short: "Two PIR servers and a client: queries/s, database bytes/s, and streaming memory bandwidth",
		Long: `Builds a random database of R records of S bytes, runs two servers and a
client (in one process, or over HTTP/2 on 127.0.0.1 with --http), and checks
every answer against the database. Reports, per server, queries/s and
database bytes folded per second (queries/s × database size; one pass over
the records serves a whole batch), the bytes physically streamed per second,
and the machine's memory read bandwidth, measured in the same run by a plain
multi-threaded streaming read of a 512 MiB buffer.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Records < 1 || cfg.Records > pir.MaxRecords {
				return badInput("--records %d is outside 1..%d", cfg.Records, pir.MaxRecords)
			}
			if cfg.RecordSize < pir.MinRecordSize || cfg.RecordSize > pir.MaxRecordSize {
				return badInput("--record-size %d is outside %d..%d", cfg.RecordSize, pir.MinRecordSize, pir.MaxRecordSize)
			}
			if cfg.Batch < 1 || cfg.Batch > pir.MaxKeysPerRequest {
				return badInput("--batch %d is outside 1..%d", cfg.Batch, pir.MaxKeysPerRequest)
			}
			if minTime < 0 {
				return badInput("--min-time %v must not be negative", minTime)
			}
			cfg.MinTime = minTime
			res, err := pir.Bench(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if asJSON {
				if err := writeIndented(cmd.OutOrStdout(), res); err != nil {
					return err
				}
			} else {
				w := cmd.OutOrStdout()
				fmt.Fprintf(w, "pir: %d records × %d B (%.1f MiB), batch %d, %d workers, kernel %s, %s\n",
					res.Records, res.RecordSize, float64(res.DBBytes)/(1<<20), res.Batch, res.Workers, res.Kernel, res.Transport)
				fmt.Fprintf(w, "  queries/s per server      %.0f (%.2f ms per batch)\n", res.QueriesPerSec, res.ServerSecPerBatch*1e3)
				fmt.Fprintf(w, "  database bytes/s          %.2f GB/s\n", res.DBBytesPerSec/1e9)
				fmt.Fprintf(w, "  physical scan bytes/s     %.2f GB/s\n", res.PhysicalScanBytesPerSec/1e9)
				fmt.Fprintf(w, "  memory read bandwidth     %.2f GB/s  (database bytes/s ÷ bandwidth = %.2f)\n", res.MemBandwidth/1e9, res.ScanOverMem)
				fmt.Fprintf(w, "  end-to-end queries/s      %.0f\n", res.EndToEndQueriesPerSec)
				fmt.Fprintf(w, "  answers verified          %d of %d\n", res.AnswersVerified, res.Queries)
			}
			if res.AnswersWrong > 0 {
				return fmt.Errorf("%d of %d answers were wrong", res.AnswersWrong, res.Queries)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Records, "records", 1<<20, "number of records")
	f.IntVar(&cfg.RecordSize, "record-size", 16, "bytes per record")
	f.IntVar(&cfg.Batch, "batch", 32, "queries per pass over the database")
	f.IntVar(&cfg.Workers, "workers", 0, "scan goroutines per server (0: one per CPU)")
	f.BoolVar(&cfg.HTTP, "http", false, "run the servers on 127.0.0.1 and query over HTTP/2")
	f.Uint64Var(&cfg.Seed, "seed", 1, "database and index seed")
	f.DurationVar(&minTime, "min-time", 2*time.Second, "keep running batches at least this long")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
