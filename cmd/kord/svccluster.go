package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/internal/peertls"
	"github.com/kord-fss/kord/module/provision"
)

// svcProc is one child process of a cluster.
type svcProc struct {
	name  string
	cmd   *exec.Cmd
	ready map[string]string
	done  chan struct{}
}

// svcStart starts `bin args...` as a daemon of site b (0 or 1), waits for
// its JSON readiness line on stdout and returns it. stderr goes to logPath.
func svcStart(ctx context.Context, site int, bin, name, logPath string, args ...string) (*svcProc, error) {
	cmd := exec.Command(bin, args...)
	svcDetach(cmd)
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(daemonProcs()))
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := svcStartOn(cmd, siteCPUs(site)); err != nil {
		logf.Close()
		return nil, err
	}
	p := &svcProc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); logf.Close(); close(p.done) }()
	line := make(chan string, 1)
	go func() {
		br := bufio.NewReader(out)
		s, _ := br.ReadString('\n')
		line <- s
		io.Copy(io.Discard, br)
	}()
	select {
	case s := <-line:
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil || m["ready"] != true {
			p.kill()
			tail, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("%s did not start: %s", name, lastLines(tail, 5))
		}
		p.ready = map[string]string{}
		for k, v := range m {
			p.ready[k] = fmt.Sprint(v)
		}
	case <-time.After(20 * time.Second):
		p.kill()
		return nil, fmt.Errorf("%s did not become ready", name)
	case <-ctx.Done():
		p.kill()
		return nil, ctx.Err()
	}
	return p, nil
}

func lastLines(b []byte, n int) string {
	lines := 0
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' && i != len(b)-1 {
			lines++
			if lines == n {
				return string(b[i+1:])
			}
		}
	}
	return string(b)
}

// kill sends SIGKILL and waits for the process to go.
func (p *svcProc) kill() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Kill()
	<-p.done
}

// daemonProcs is the GOMAXPROCS of each daemon the cluster starts, unless
// GOMAXPROCS is set: a quarter of the cores, at least one. The cluster puts
// four daemons and their client on one machine, where each daemon's Go
// runtime would otherwise keep as many threads hunting for work as there
// are cores, and the four runtimes' idle spinning and thread hand-offs
// compete for the same cores (on 2 cores it cost about a tenth of the
// daemons' CPU). At two sites, each on its own machine, the defaults fit.
func daemonProcs() int { return max(1, runtime.NumCPU()/4) }

// siteCPUs is the CPUs the daemons of site b run on: each site gets half
// of this process's CPUs, as if each site had a machine of its own (a
// site's module and party pass every key between them, and share caches
// and a run queue that way). Nil — no pinning — on fewer than two CPUs,
// where CPU affinity is not supported, or when KORD_CLUSTER_PIN=0.
func siteCPUs(b int) []int {
	if os.Getenv("KORD_CLUSTER_PIN") == "0" {
		return nil
	}
	cpus := allowedCPUs()
	if len(cpus) < 2 {
		return nil
	}
	h := len(cpus) / 2
	if b == 0 {
		return cpus[:h]
	}
	return cpus[h:]
}

// svcCluster is two modules and two parties as child processes on loopback.
type svcCluster struct {
	bin, dir string
	opts     clusterOpts
	mods     [2]*svcProc
	parties  [2]*svcProc
	apps     [2]*client.Client
	started  int // processes started in all
	mu       sync.Mutex
}

type clusterOpts struct {
	Batch, InFlight int
	Window          uint64
	Journal         bool                                  // modules journal keystream positions
	KEM             string                                // modules' pairing KEM ("" = default)
	MatchTimeout    time.Duration                         // party 1
	PeerTimeout     time.Duration                         // party 0
	PeerVia         func(peerAddr string) (string, error) // optional: a proxy in front of party 1's peer port
	PartyArgs       [2][]string                           // extra flags of party 0 and party 1 (e.g. --tls-*)
	Bin             string                                // the kord binary ("" = this executable)

	// The peer link runs mutual TLS with certificates made under the
	// cluster's directory (peertls.Init), unless PeerPlaintext (then
	// --peer-plaintext) or OwnPeerTLS (PartyArgs carry --tls-* or
	// --peer-plaintext themselves).
	PeerPlaintext, OwnPeerTLS bool

	// InProcessModules: no module processes; each party runs its module
	// inside its own process (kord party --module in-process).
	InProcessModules bool
}

func (c *svcCluster) modArgs(b int) []string {
	args := []string{"module", "--party", strconv.Itoa(b), "--socket", c.sockPath(b), "--state", c.statePath(b),
		"--secret-file", filepath.Join(c.dir, "secret"), "--allow-same-uid", "--log-level", "warn"}
	if c.opts.Window != 0 {
		args = append(args, "--window", strconv.FormatUint(c.opts.Window, 10))
	}
	if c.opts.Journal {
		args = append(args, "--journal", c.JournalPath(b))
	}
	if c.opts.KEM != "" {
		args = append(args, "--kem", c.opts.KEM)
	}
	return args
}

func (c *svcCluster) sockPath(b int) string  { return filepath.Join(c.dir, fmt.Sprintf("m%d.sock", b)) }
func (c *svcCluster) statePath(b int) string { return filepath.Join(c.dir, fmt.Sprintf("m%d.db", b)) }
func (c *svcCluster) JournalPath(b int) string {
	return filepath.Join(c.dir, fmt.Sprintf("m%d.journal", b))
}
func (c *svcCluster) logPath(name string) string {
	return filepath.Join(c.dir, name+".log")
}

// startCluster starts, connects and pairs the four processes in a fresh
// temporary directory (or dir, if given).
func startCluster(ctx context.Context, dir string, o clusterOpts) (_ *svcCluster, err error) {
	bin := o.Bin
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "kord-cluster"); err != nil {
			return nil, err
		}
	}
	c := &svcCluster{bin: bin, dir: dir, opts: o}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	secret := provision.New()
	text, err := provision.Encode(secret)
	clear(secret)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte(text+"\n"), 0o600); err != nil {
		return nil, err
	}
	var peerArgs [2][]string
	switch {
	case o.PeerPlaintext:
		peerArgs = [2][]string{{"--peer-plaintext"}, {"--peer-plaintext"}}
	case !o.OwnPeerTLS:
		tdir := filepath.Join(dir, "tls")
		if err := peertls.Init(tdir, 24*time.Hour); err != nil {
			return nil, err
		}
		for b := range peerArgs {
			f := peertls.PartyFiles(tdir, b)
			peerArgs[b] = []string{"--tls-cert", f.Cert, "--tls-key", f.Key, "--tls-ca", f.CA}
		}
	}
	for b := 0; b < 2 && !o.InProcessModules; b++ {
		if err := c.StartModule(ctx, b); err != nil {
			return nil, err
		}
	}
	common := func(b int) []string {
		a := []string{"party", "--party", strconv.Itoa(b), "--module", c.sockPath(b), "--listen", "127.0.0.1:0",
			"--metrics", "127.0.0.1:0", "--log-level", "warn"}
		if o.InProcessModules {
			a[4] = moduleInProcess
			a = append(a, "--state", c.statePath(b), "--secret-file", filepath.Join(c.dir, "secret"))
			if o.Window != 0 {
				a = append(a, "--window", strconv.FormatUint(o.Window, 10))
			}
			if o.KEM != "" {
				a = append(a, "--kem", o.KEM)
			}
		}
		if o.Batch > 0 {
			a = append(a, "--batch", strconv.Itoa(o.Batch))
		}
		if o.InFlight > 0 {
			a = append(a, "--in-flight", strconv.Itoa(o.InFlight))
		}
		if o.MatchTimeout > 0 {
			a = append(a, "--match-timeout", o.MatchTimeout.String())
		}
		if o.PeerTimeout > 0 {
			a = append(a, "--peer-timeout", o.PeerTimeout.String())
		}
		a = append(a, peerArgs[b]...)
		return append(a, o.PartyArgs[b]...)
	}
	p1, err := svcStart(ctx, 1, bin, "party1", c.logPath("party1"), append(common(1), "--peer-listen", "127.0.0.1:0")...)
	if err != nil {
		return nil, err
	}
	c.parties[1] = p1
	c.started++
	peer := p1.ready["peer"]
	if o.PeerVia != nil {
		if peer, err = o.PeerVia(peer); err != nil {
			return nil, err
		}
	}
	p0, err := svcStart(ctx, 0, bin, "party0", c.logPath("party0"), append(common(0), "--peer", peer)...)
	if err != nil {
		return nil, err
	}
	c.parties[0] = p0
	c.started++
	for b := 0; b < 2; b++ {
		if c.apps[b], err = client.Dial(c.parties[b].ready["app"], nil); err != nil {
			return nil, err
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.apps[0].Pair(pctx); err != nil {
		return nil, fmt.Errorf("pairing: %w", err)
	}
	return c, nil
}

// StartModule (re)starts module b.
func (c *svcCluster) StartModule(ctx context.Context, b int) error {
	p, err := svcStart(ctx, b, c.bin, fmt.Sprintf("module%d", b), c.logPath(fmt.Sprintf("module%d", b)), c.modArgs(b)...)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.mods[b] = p
	c.started++
	c.mu.Unlock()
	return nil
}

// KillModule kill -9s module b.
func (c *svcCluster) KillModule(b int) {
	c.mu.Lock()
	p := c.mods[b]
	c.mods[b] = nil
	c.mu.Unlock()
	p.kill()
}

// stop asks the process to exit (SIGTERM) and kills it after a grace period.
func (p *svcProc) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(3 * time.Second):
		p.kill()
	}
}

// Close stops every child and removes nothing (the caller owns dir).
func (c *svcCluster) Close() {
	for b := 0; b < 2; b++ {
		if c.apps[b] != nil {
			c.apps[b].Close()
		}
	}
	for _, p := range []*svcProc{c.parties[0], c.parties[1], c.mods[0], c.mods[1]} {
		p.stop()
	}
}

// liveCPU is the user and system CPU time the cluster's running daemons
// have used so far (from /proc); ok is false if any could not be read.
func (c *svcCluster) liveCPU() (t time.Duration, ok bool) {
	ok = true
	for _, p := range []*svcProc{c.parties[0], c.parties[1], c.mods[0], c.mods[1]} {
		if p == nil || p.cmd.Process == nil {
			ok = false
			continue
		}
		d, err := procCPU(p.cmd.Process.Pid)
		if err != nil {
			ok = false
			continue
		}
		t += d
	}
	return t, ok
}

// Remove closes the cluster and deletes its directory.
func (c *svcCluster) Remove() {
	c.Close()
	os.RemoveAll(c.dir)
}

var errClusterGone = errors.New("cluster closed")
