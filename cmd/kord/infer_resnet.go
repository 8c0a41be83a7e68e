package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kord-fss/kord/cmd/kord/internal/inferdemo"
	"github.com/kord-fss/kord/infer"
	"github.com/kord-fss/kord/internal/netshape"
	"github.com/kord-fss/kord/service"
)

// The ResNet-18 forms of `kord infer inventory` and `kord infer demo`
// (--model resnet18, or resnet18-s<side>-w<width>-c<classes> for a
// reduced one): flags map to infer.KeyInventory and inferdemo.ResNetDemo.

// isResNet reports whether --model names a ResNet.
func isResNet(model string) bool { return strings.HasPrefix(model, "resnet18") }

// resnetModel returns the named ResNet with the documented seeded weights,
// or the model file when one is given.
func resnetModel(model, file string) (*infer.Model, error) {
	if file != "" {
		return infer.Load(file)
	}
	if _, ok := infer.ParseResNetName(model); !ok {
		return nil, badInput("--model %q: want resnet18 or resnet18-s<side>-w<width>-c<classes>", model)
	}
	return infer.ResNetModel(model)
}

// resnetFlags are the demo's streaming flags.
type resnetFlags struct {
	overlap  bool
	chunk    int
	noDealer bool
	quiet    bool
	compare  bool
	perReq   int
	prefetch int64
	appLink  string // --app-link, every model's
}

func addResNetFlags(f *pflag.FlagSet, r *resnetFlags) {
	f.BoolVar(&r.overlap, "overlap", false, "ResNet: supply keys ahead of and during the online phase (default: alternate, to time them apart)")
	f.IntVar(&r.chunk, "chunk", infer.DefaultChunk, "ResNet: values per streamed step (one online round each; bounds the material in memory)")
	f.BoolVar(&r.noDealer, "no-dealer", false, "ResNet: skip the trusted dealer's key supply of the same inventory")
	f.BoolVar(&r.quiet, "quiet", false, "ResNet: no per-layer progress lines on stderr")
	f.BoolVar(&r.compare, "compare-overlap", false, "ResNet: run every image sequentially (the reported split) and then overlapped, in the same run")
	f.Int64Var(&r.prefetch, "prefetch-bytes", inferdemo.DefaultPrefetchBytes, "material an online process may fetch ahead of the online phase (MLP/CNN: each party's, the image in use counted, an overlapped pass after the timed one when it holds 2 images or more, 0: none; ResNet with --overlap/--compare-overlap: both parties' steps held ready)")
	f.IntVar(&r.perReq, "per-request", infer.DefaultDaemonPerRequest, "ResNet through the daemons: most keys per request (1..4096; a step's keys go as several requests, all sent at once)")
}

// resnetDemo is `kord infer demo --model resnet18…`: flags to
// inferdemo.ResNet (the daemons of two sites, or with --in-process a
// module pair in this process) and its report printed.
func resnetDemo(cmd *cobra.Command, model, file string, start, images int, asJSON bool, linkName string, dealer, inProcess bool, r resnetFlags, out func(int, []int64) error) error {
	link, err := netshape.Preset(linkName)
	if err != nil {
		return badInput("--link must be one of loopback, lan, 1gbps, wan")
	}
	if dealer {
		return badInput("--dealer: a ResNet's online phase runs on the modules' material (the dealer's supply is timed beside it; --no-dealer skips it)")
	}
	if images < 1 || images > 100 {
		return badInput("--images must be in 1..100 for a ResNet")
	}
	if r.chunk < 1 || r.chunk > 1<<22 {
		return badInput("--chunk must be in 1..4194304")
	}
	if r.perReq < 1 || r.perReq > service.MaxCount {
		return badInput("--per-request must be in 1..%d", service.MaxCount)
	}
	m, err := resnetModel(model, file)
	if err != nil {
		return err
	}
	if r.compare && r.overlap {
		return badInput("--compare-overlap runs both modes: leave out --overlap")
	}
	cfg := inferdemo.ResNetDemoConfig{Model: m, Start: start, Images: images, Output: out, NoDealer: r.noDealer, CompareOverlap: r.compare, PerRequest: r.perReq,
		Link: link, AppLink: r.appLink, Stream: infer.StreamConfig{Chunk: r.chunk, Overlap: r.overlap, PrefetchBytes: r.prefetch}}
	if !r.quiet {
		cfg.Stream.Progress = cmd.ErrOrStderr()
		cfg.Log = cmd.ErrOrStderr()
	}
	// Ctrl-C stops the run and the daemons.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := inferdemo.ResNet(ctx, cfg, inProcess)
	if err != nil {
		return err
	}
	if asJSON {
		if err := json.NewEncoder(cmd.OutOrStdout()).Encode(rep); err != nil {
			return err
		}
	} else {
		w := cmd.OutOrStdout()
		fmt.Fprintf(w, "%s: %d images, %d bit-exact, %d mismatches, link %s (overlap %v, chunk %d, %d steps)\n"+
			"per image: online %.1f s, %d bytes/party, %d rounds; key supply %.1f s (share %.3f, %.0f bytes between the sites); %d keys + %d correlations\n"+
			"trusted dealer's supply of the same material: %.1f s (share %.3f), %d bytes/party\n"+
			"session: %.1f s offline, %.1f s online, %d bytes/party; peak RSS %d MiB\n",
			rep.Model, rep.Images, rep.BitExact, rep.Mismatches, rep.Link, rep.Overlap, rep.Chunk, rep.Steps,
			rep.OnlineMsPerImage/1000, rep.OnlineBytesPerPartyPerImage, rep.OnlineRounds, rep.KeySupplyMsPerImage/1000, rep.KeySupplyShare, rep.OfflineInterSiteBytesPerImage,
			rep.OfflineKeysPerImage, rep.OfflineCorrPerImage,
			rep.DealerKeySupplyMsPerImage/1000, rep.DealerKeySupplyShare, rep.DealerBytesPerPartyPerImage,
			rep.SessionOfflineMs/1000, rep.SessionOnlineMs/1000, rep.SessionBytesPerParty, rep.PeakRSSBytes>>20)
		if rep.PeakRSSByProcess != nil {
			fmt.Fprintf(w, "peak RSS (MiB): client %d, party0 %d, party1 %d, module0 %d, module1 %d\n", rep.PeakRSSByProcess["client"]>>20,
				rep.PeakRSSByProcess["party0"]>>20, rep.PeakRSSByProcess["party1"]>>20, rep.PeakRSSByProcess["module0"]>>20, rep.PeakRSSByProcess["module1"]>>20)
		}
		fmt.Fprintf(w, "key supply: %s\n", rep.KeySupplyPath)
		if rep.OverlapWallMsPerImage > 0 {
			fmt.Fprintf(w, "same images overlapped: wall %.1f s per image against %.1f s sequential (%.2f×)\n",
				rep.OverlapWallMsPerImage/1000, rep.WallMsPerImage/1000, rep.OverlapSpeedup)
		}
	}
	if rep.Mismatches > 0 {
		return fmt.Errorf("%d secure outputs differ from the cleartext model", rep.Mismatches)
	}
	return nil
}

// resnetInventory is `kord infer inventory --model resnet18…`.
func resnetInventory(cmd *cobra.Command, model, file string, asJSON bool, chunk int) error {
	m, err := resnetModel(model, file)
	if err != nil {
		return err
	}
	inv, err := m.KeyInventory(chunk)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if asJSON {
		return json.NewEncoder(w).Encode(inv)
	}
	fmt.Fprintf(w, "%-5s %-8s %-13s %-13s %9s %9s %6s %9s %7s %10s\n", "layer", "kind", "in", "out", "values", "keys", "corr", "corrwords", "rounds", "bytes")
	for _, c := range inv.Layers {
		fmt.Fprintf(w, "%-5d %-8s %-13s %-13s %9d %9d %6d %9d %7d %10d\n", c.Layer, c.Kind, c.In, c.Out, c.Values, c.KeyTotal, c.Correlations, c.CorrWords, c.Rounds, c.Bytes)
	}
	fmt.Fprintf(w, "total: %d keys", inv.KeyTotal)
	for _, k := range inv.KeyKinds() {
		fmt.Fprintf(w, ", %s %d", k, inv.Keys[k])
	}
	fmt.Fprintf(w, "\n%d ReLU comparisons (max-pool included), %d truncations; %d input correlations (%d words/party), %d weight-mask words/party once per session\n",
		inv.ReLUs, inv.Truncations, inv.Correlations, inv.CorrWords, inv.SessionWords)
	fmt.Fprintf(w, "online: %d rounds (chunk %d), %d bytes from party 0; material %d bytes/party\n", inv.Rounds, inv.Chunk, inv.Bytes, inv.MaterialBytes)
	if inv.KORDTrees > 0 {
		fmt.Fprintf(w, "KORD: %d trees (%d as a DCF-32 lower bound); kord's keys / KORD's trees = %.3f (docs/inference.md explains the difference)\n",
			inv.KORDTrees, inv.KORDDCF32Bound, inv.RatioToKORD)
	}
	return nil
}
