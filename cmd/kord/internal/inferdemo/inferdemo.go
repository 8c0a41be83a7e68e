// Package inferdemo is the five-process path of `kord infer demo`: two
// key-generation modules and two party daemons (cmd/kord/internal/cluster, as
// `kord demo` starts them), the two online parties as OS processes of
// their own (`kord infer party`, PartyMain) and the trusted dealer of the
// baseline (`kord infer dealer`, DealerMain), every inter-machine link
// shaped on loopback by internal/netshape: the online parties' link, the
// sites' peer link (a netshape.Proxy in front of party 1's peer port,
// which also counts the bytes between the sites) and the dealer's two
// links, one to each party.
//
// Each online party gets every key and correlation from its own party
// daemon (infer.PartySupply) and, in the same run, the dealer's material
// for the same image over its own link; it measures both key supplies
// and the online phase per image. Processes collects the parties'
// reports and checks every output of party 1 against the cleartext
// fixed-point model.
//
// Files: inferdemo.go the five-process MNIST run and its two child
// mains; process.go one online party (RunParty) and the dealer
// (RunDealer) as each process runs them; dealerlink.go the trusted
// dealer's shaped links (DealerLink) and shipment framing; demo.go the
// in-process MNIST demo (Demo, `--in-process`); resnet_demo.go the
// streamed ResNet run (ResNetDemo) and sites.go its four daemons. The
// infer package holds the models and the protocol; what starts
// processes or shapes links is here.
package inferdemo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"google.golang.org/grpc/credentials"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/infer"
	"github.com/kord-fss/kord/internal/daemon"
	"github.com/kord-fss/kord/internal/netshape"
)

// Config is one five-process run.
type Config struct {
	// Model is "mlp" or "cnn"; File, when set, a model file to use
	// instead of the built-in weights.
	Model, File string
	Start       int // first test image
	Images      int
	Link        netshape.Profile
	// Bin is the kord binary ("" = this executable).
	Bin string
	// Progress, when not nil, gets a line per stage.
	Progress io.Writer
	// PrefetchBytes bounds each online party's material in the overlapped
	// pass (PartyConfig.PrefetchBytes; under two images' material:
	// no overlapped pass).
	PrefetchBytes int64
	// Output, when set, gets each image's index and the logits the
	// client (party 1) reconstructed, in order, once the run is done.
	Output func(index int, logits []int64) error
	// AppLink is how the online parties reach their sites' party
	// daemons: "unix" (or ""; a same-host application on the Unix-socket
	// API, named by its uid) or "tcp" (TLS 1.3 over TCP, as a remote
	// application).
	AppLink string
}

// KeySupplyPath and DealerPath describe where Processes measures the two
// key supplies.
const (
	KeySupplyPath = "five processes: each online party (its own OS process) gets every key and correlation from its own party daemon (kord party, gRPC) whose module daemon (kord module, Unix socket) derives it with the other site's module; the sites' peer link carries batch headers only and is shaped and counted by a proxy"
	DealerPath    = "dealer process: one OS process generates both parties' material and ships each party its own over that party's shaped TCP link, both at once; measured by the online parties from request to parsed material"
)

// line is one JSON line of a party or dealer process.
type line struct {
	Online  string        `json:"online,omitempty"`
	Party0  string        `json:"party0,omitempty"`
	Party1  string        `json:"party1,omitempty"`
	Session *PartySession `json:"session,omitempty"`
	Image   *PartyImage   `json:"image,omitempty"`
	Done    bool          `json:"done,omitempty"`
	Error   string        `json:"error,omitempty"`
}

// child is a party or dealer process of the run. Its stdout is read to
// the end before the process is waited for (Wait closes the pipe: lines
// the child wrote just before it exited would be lost).
type child struct {
	name  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan []byte
	log   string
	done  chan error
}

func startChild(ctx context.Context, bin, dir, name string, args ...string) (*child, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	in, err := cmd.StdinPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, in: in, lines: make(chan []byte, 64), log: logPath, done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<16), 1<<24)
		for sc.Scan() {
			c.lines <- bytes.Clone(sc.Bytes())
		}
		close(c.lines)
		c.done <- cmd.Wait()
		logf.Close()
	}()
	return c, nil
}

// next reads the child's next line; an error line or the end of its
// output becomes an error naming the child (with its log's last lines).
func (c *child) next() (*line, error) {
	b, ok := <-c.lines
	if !ok {
		err := <-c.done
		c.done <- err
		tail, _ := os.ReadFile(c.log)
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return nil, fmt.Errorf("%s ended (%v): %s", c.name, err, tail)
	}
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("%s wrote %q: %w", c.name, b, err)
	}
	if l.Error != "" {
		return nil, fmt.Errorf("%s: %s", c.name, l.Error)
	}
	return &l, nil
}

func (c *child) stop() {
	_ = c.in.Close()
	if c.cmd.Process != nil {
		_ = c.cmd.Process.Kill()
	}
	for range c.lines { // what it wrote last
	}
	<-c.done
}

// Processes runs the demo through the five processes (plus the dealer)
// and returns its report.
func Processes(ctx context.Context, cfg Config) (_ *DemoReport, err error) {
	m, err := loadModel(cfg.Model, cfg.File)
	if err != nil {
		return nil, err
	}
	_, set, err := infer.LoadMNIST()
	if err != nil {
		return nil, err
	}
	if cfg.Images < 1 || cfg.Start < 0 || cfg.Start+cfg.Images > len(set.Images) {
		return nil, fmt.Errorf("inferdemo: images %d..%d are outside the %d test images", cfg.Start, cfg.Start+cfg.Images-1, len(set.Images))
	}
	bin := cfg.Bin
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	say := func(format string, a ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, format, a...)
		}
	}
	link := cfg.Link
	if link.Name == "" {
		link = netshape.Profile{Name: "loopback"}
	}
	dir, err := os.MkdirTemp("", "kord-infer")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	say("starting 2 modules and 2 party daemons (peer link %s)… ", link.Name)
	c, err := startSites(ctx, dir, link, false, cluster.Options{Batch: 4096, AppUnix: cfg.AppLink != "tcp"})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	say("paired.\n")

	common := []string{"--model", cfg.Model, "--images", strconv.Itoa(cfg.Images), "--link", link.Name}
	withPrefetch := []string{"--prefetch-bytes", strconv.FormatInt(cfg.PrefetchBytes, 10)}
	if cfg.File != "" {
		common = append(common, "--file", cfg.File)
	}
	dealer, err := startChild(ctx, bin, dir, "dealer", append([]string{"infer", "dealer"}, common...)...)
	if err != nil {
		return nil, err
	}
	defer dealer.stop()
	dl, err := dealer.next()
	if err != nil {
		return nil, err
	}
	withParty := func(b int, extra ...string) []string {
		a := append([]string{"infer", "party", "--party", strconv.Itoa(b), "--app", c.AppAddr(b),
			"--start", strconv.Itoa(cfg.Start), "--dealer", []string{dl.Party0, dl.Party1}[b]}, common...)
		a = append(a, c.AppArgs(b)...) // the application API's TLS, as the cluster runs it
		return append(append(a, withPrefetch...), extra...)
	}
	var ps [2]*child
	if ps[1], err = startChild(ctx, bin, dir, "online1", withParty(1, "--online-listen", "127.0.0.1:0")...); err != nil {
		return nil, err
	}
	defer ps[1].stop()
	l1, err := ps[1].next()
	if err != nil {
		return nil, err
	}
	if ps[0], err = startChild(ctx, bin, dir, "online0", withParty(0, "--online", l1.Online)...); err != nil {
		return nil, err
	}
	defer ps[0].stop()
	say("online parties and dealer started (%d processes in all); opening the session… ", c.Started()+3)
	var sess [2]*PartySession
	for b := 0; b < 2; b++ {
		l, err := ps[b].next()
		if err != nil {
			return nil, err
		}
		if l.Session == nil {
			return nil, fmt.Errorf("party %d: expected its session, got %+v", b, l)
		}
		sess[b] = l.Session
	}
	startBytes := c.crossed()
	for b := 0; b < 2; b++ {
		if _, err := io.WriteString(ps[b].in, "go\n"); err != nil {
			return nil, fmt.Errorf("party %d: %w", b, err)
		}
	}
	say("running %d images…\n", cfg.Images)
	rep := &DemoReport{Model: m.Name, Start: cfg.Start, Images: cfg.Images, Link: link.Name, AppLink: cluster.AppLinkName(cfg.AppLink),
		Source: "party daemons (derived keys and derived correlations), five processes", KeySupplyPath: KeySupplyPath, DealerPath: DealerPath,
		PrefetchWindow: sess[0].PrefetchWindow, PrefetchBytes: cfg.PrefetchBytes}
	total := cfg.Images
	if sess[0].PrefetchWindow != sess[1].PrefetchWindow {
		return nil, fmt.Errorf("the parties' prefetch windows differ: %d and %d", sess[0].PrefetchWindow, sess[1].PrefetchWindow)
	}
	if sess[0].PrefetchWindow >= 2 {
		total *= 2 // the overlapped pass follows
	}
	var imgs [2][]PartyImage
	var wg sync.WaitGroup
	var errs [2]error
	for b := 0; b < 2; b++ {
		wg.Add(1)
		go func(b int) {
			defer wg.Done()
			for len(imgs[b]) < total {
				l, err := ps[b].next()
				if err != nil {
					errs[b] = err
					cancel() // the other party and the dealer stop too
					return
				}
				if l.Image == nil || l.Image.Index != len(imgs[b]) {
					errs[b] = fmt.Errorf("party %d: expected image %d, got %+v", b, len(imgs[b]), l)
					cancel()
					return
				}
				imgs[b] = append(imgs[b], *l.Image)
			}
		}(b)
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	crossed := c.crossed() - startBytes
	fill(rep, m, set, cfg, sess, imgs, crossed)
	if cfg.Output != nil {
		// The first pass's images; an overlapped pass evaluates the same
		// images again (fill checks that both agree with the model).
		for i, im := range imgs[1][:cfg.Images] {
			if err := cfg.Output(cfg.Start+i, im.Logits); err != nil {
				return nil, err
			}
		}
	}
	return rep, nil
}

// fill computes the report from the parties' measurements: per image the
// slower party's time of each phase.
func fill(rep *DemoReport, m *infer.Model, set *infer.MNIST, cfg Config, sess [2]*PartySession, imgs [2][]PartyImage, crossed int64) {
	n := cfg.Images
	var online, supply, dealer int64
	var onlineBytes, dealerBytes [2]int64
	correct, refCorrect := 0, 0
	for i := 0; i < n; i++ {
		a, b := imgs[0][i], imgs[1][i]
		online += max(a.OnlineNs, b.OnlineNs)
		supply += max(a.KeySupplyNs, b.KeySupplyNs)
		dealer += max(a.DealerNs, b.DealerNs)
		onlineBytes[0] += a.OnlineBytes
		onlineBytes[1] += b.OnlineBytes
		dealerBytes[0] += a.DealerBytes
		dealerBytes[1] += b.DealerBytes
		x := infer.QuantizeImage(set.Images[cfg.Start+i], m.Frac)
		want, _, err := m.Ref(x)
		same := err == nil && slices.Equal(want, b.Logits)
		if len(imgs[1]) == 2*n { // the overlapped pass: the same image again
			same = same && slices.Equal(want, imgs[1][n+i].Logits)
		}
		if same {
			rep.BitExact++
		} else {
			rep.Mismatches++
		}
		if infer.Argmax(b.Logits) == set.Labels[cfg.Start+i] {
			correct++
		}
		if err == nil && infer.Argmax(want) == set.Labels[cfg.Start+i] {
			refCorrect++
		}
	}
	ms := func(ns int64) float64 { return float64(ns) / 1e6 / float64(n) }
	rep.Accuracy = float64(correct) / float64(n)
	rep.RefAccuracy = float64(refCorrect) / float64(n)
	rep.OnlineMsPerImage = ms(online)
	rep.KeySupplyMsPerImage = ms(supply)
	rep.DealerKeySupplyMsPerImage = ms(dealer)
	rep.OfflineMsPerImage = rep.KeySupplyMsPerImage
	if supply+online > 0 {
		rep.KeySupplyShare = float64(supply) / float64(supply+online)
	}
	if dealer+online > 0 {
		rep.DealerKeySupplyShare = float64(dealer) / float64(dealer+online)
	}
	rep.OnlineBytesPerPartyPerImage = max(onlineBytes[0], onlineBytes[1]) / int64(n)
	rep.OnlineRounds = imgs[0][0].Rounds
	rep.DealerBytesPerPartyPerImage = max(dealerBytes[0], dealerBytes[1]) / int64(n)
	rep.OfflineKeysPerImage = sess[0].Keys
	rep.OfflineDerivedKeysPerImage = sess[0].Keys
	rep.OfflineCorrPerImage = sess[0].Corrs
	rep.OfflineCorrWordsPerImage = sess[0].CorrWords
	rep.SessionWeightMaskWords = sess[0].WeightMaskWords
	rep.OfflineItemsPerImage = sess[0].Keys + sess[0].Corrs
	rep.OfflineBytesPerPartyPerImage = max(sess[0].MaterialBytes, sess[1].MaterialBytes)
	v := float64(crossed) / float64(len(imgs[0])) // both passes' evaluations
	rep.OfflineInterSiteBytesPerImage = &v
	rep.SessionOfflineMs = float64(max(sess[0].SessionOfflineNs, sess[1].SessionOfflineNs)) / 1e6
	rep.SessionOnlineMs = float64(max(sess[0].SessionOnlineNs, sess[1].SessionOnlineNs)) / 1e6
	rep.SessionBytesPerParty = max(sess[0].SessionBytes, sess[1].SessionBytes)
	rep.DealerSessionMs = float64(max(sess[0].DealerSessionNs, sess[1].DealerSessionNs)) / 1e6
	rep.DealerSessionBytesPerParty = max(sess[0].DealerSessionBytes, sess[1].DealerSessionBytes)
	if len(imgs[0]) == 2*n && len(imgs[1]) == 2*n {
		var wait, on, wall, sup int64
		for i := n; i < 2*n; i++ {
			a, b := imgs[0][i], imgs[1][i]
			wait += max(a.KeyWaitNs, b.KeyWaitNs)
			on += max(a.OnlineNs, b.OnlineNs)
			wall += max(a.KeyWaitNs+a.OnlineNs, b.KeyWaitNs+b.OnlineNs)
			sup += max(a.KeySupplyNs, b.KeySupplyNs)
		}
		rep.OnlineKeyWaitMsPerImage = ms(wait)
		rep.OverlapOnlineMsPerImage = ms(on)
		rep.OverlapWallMsPerImage = ms(wall)
		rep.OverlapKeySupplyMsPerImage = ms(sup)
	}
}

func loadModel(name, file string) (*infer.Model, error) {
	if file != "" {
		return infer.Load(file)
	}
	return infer.Builtin(name)
}

// PartyArgs are the flags of one online party process.
type PartyArgs struct {
	B           int
	Model, File string
	Start       int
	Images      int
	Link        string
	// App is the party daemon's application address; Dealer the dealer's
	// port for this party ("" = no dealer baseline).
	App, Dealer string
	// AppTLS: the application's certificate files when the party daemon's
	// API runs TLS (nil: plaintext).
	AppTLS *client.TLSFiles
	// Online (party 0) is party 1's online address; OnlineListen (party
	// 1) where to listen for party 0.
	Online, OnlineListen string
	// PrefetchBytes is PartyConfig.PrefetchBytes.
	PrefetchBytes int64
}

// PartyMain is `kord infer party`: one online party process. It writes
// JSON lines to out — party 1 first its online address, then each its
// session, then one line per image — and waits for a line on in before
// the first image.
func PartyMain(ctx context.Context, a PartyArgs, in io.Reader, out io.Writer) error {
	defer daemon.Profile(fmt.Sprintf("online%d", a.B))()
	enc := json.NewEncoder(out)
	err := partyMain(ctx, a, in, enc)
	if err != nil {
		_ = enc.Encode(line{Error: err.Error()})
	}
	return err
}

func partyMain(ctx context.Context, a PartyArgs, in io.Reader, enc *json.Encoder) error {
	if a.B != 0 && a.B != 1 {
		return fmt.Errorf("--party must be 0 or 1, not %d", a.B)
	}
	p, err := netshape.Preset(a.Link)
	if err != nil {
		return err
	}
	m, err := loadModel(a.Model, a.File)
	if err != nil {
		return err
	}
	cfg := PartyConfig{B: a.B, Model: m, Count: a.Images, FirstID: 1, PrefetchBytes: a.PrefetchBytes}
	if a.B == 1 {
		_, set, err := infer.LoadMNIST()
		if err != nil {
			return err
		}
		if a.Images < 1 || a.Start < 0 || a.Start+a.Images > len(set.Images) {
			return fmt.Errorf("--start %d and --images %d are outside the %d test images", a.Start, a.Images, len(set.Images))
		}
		for i := a.Start; i < a.Start+a.Images; i++ {
			cfg.Images = append(cfg.Images, infer.QuantizeImage(set.Images[i], m.Frac))
		}
		cfg.Model = m.Arch() // the client never holds the weights
	}
	var creds credentials.TransportCredentials
	if a.AppTLS != nil {
		if creds, err = client.AppTLS(*a.AppTLS); err != nil {
			return err
		}
	}
	app, err := client.Dial(a.App, creds)
	if err != nil {
		return err
	}
	defer app.Close()
	cfg.App = app
	if a.B == 1 {
		l, err := net.Listen("tcp", a.OnlineListen)
		if err != nil {
			return err
		}
		defer l.Close()
		if err := enc.Encode(line{Online: l.Addr().String()}); err != nil {
			return err
		}
		c, err := netshape.WrapListener(l, p).Accept()
		if err != nil {
			return err
		}
		cfg.Peer = c
	} else {
		c, err := netshape.Dial(ctx, "tcp", a.Online, p)
		if err != nil {
			return err
		}
		cfg.Peer = c
	}
	if a.Dealer != "" {
		c, err := netshape.Dial(ctx, "tcp", a.Dealer, p)
		if err != nil {
			return err
		}
		defer c.Close()
		cfg.Dealer = c
	}
	br := bufio.NewReader(in)
	cfg.Ready = func(s PartySession) error {
		if err := enc.Encode(line{Session: &s}); err != nil {
			return err
		}
		if _, err := br.ReadString('\n'); err != nil {
			return fmt.Errorf("waiting for the go signal: %w", err)
		}
		return nil
	}
	cfg.Report = func(r PartyImage) error { return enc.Encode(line{Image: &r}) }
	if err := RunParty(ctx, cfg); err != nil {
		return err
	}
	return enc.Encode(line{Done: true})
}

// DealerMain is `kord infer dealer`: the trusted dealer's process. It
// listens for party 0 and party 1 on ports of their own (writing them as
// one JSON line to out), shapes what it sends each by the link preset,
// and serves the session and images evaluations (RunDealer).
func DealerMain(ctx context.Context, model, file string, images int, linkName string, out io.Writer) error {
	defer daemon.Profile("dealer")()
	enc := json.NewEncoder(out)
	err := dealerMain(ctx, model, file, images, linkName, enc)
	if err != nil {
		_ = enc.Encode(line{Error: err.Error()})
	}
	return err
}

func dealerMain(ctx context.Context, model, file string, images int, linkName string, enc *json.Encoder) error {
	p, err := netshape.Preset(linkName)
	if err != nil {
		return err
	}
	m, err := loadModel(model, file)
	if err != nil {
		return err
	}
	var ls [2]net.Listener
	for b := range ls {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer l.Close()
		ls[b] = netshape.WrapListener(l, p)
	}
	if err := enc.Encode(line{Party0: ls[0].Addr().String(), Party1: ls[1].Addr().String()}); err != nil {
		return err
	}
	var links [2]net.Conn
	for b := range ls {
		c, err := ls[b].Accept()
		if err != nil {
			return err
		}
		defer c.Close()
		links[b] = c
	}
	return RunDealer(ctx, m.Arch(), links, images)
}
