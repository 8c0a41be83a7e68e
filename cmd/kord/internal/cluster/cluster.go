// Package cluster supervises a kord deployment on one machine for demos,
// benchmarks and end-to-end tests: two modules and two parties as child
// processes of a kord binary on loopback (or the parties alone, each
// running its module inside), each started on its site's half of the CPUs
// and read ready from its JSON readiness line, connected, paired, and
// killed and restarted at will.
package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/internal/daemon"
	"github.com/kord-fss/kord/internal/peertls"
	"github.com/kord-fss/kord/module/provision"
)

// A Daemon is one child process of a cluster.
type Daemon struct {
	Name string
	// Ready is the daemon's readiness line: its addresses ("app", "peer",
	// "metrics", "socket") and "pid", as strings.
	Ready map[string]string
	cmd   *exec.Cmd
	done  chan struct{}
}

// Pid is the daemon's process id.
func (p *Daemon) Pid() int { return p.cmd.Process.Pid }

// CPU is the user and system CPU time the daemon has used so far (from
// /proc where there is one).
func (p *Daemon) CPU() (time.Duration, error) { return procCPU(p.Pid()) }

// StartDaemon starts `bin args...` as a daemon of site b (0 or 1), waits for
// its JSON readiness line on stdout and returns it. stderr goes to logPath.
func StartDaemon(ctx context.Context, site int, bin, name, logPath string, args ...string) (*Daemon, error) {
	cmd := exec.Command(bin, args...)
	detach(cmd)
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
	if err := startOn(cmd, siteCPUs(site)); err != nil {
		logf.Close()
		return nil, err
	}
	p := &Daemon{Name: name, cmd: cmd, done: make(chan struct{})}
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
		kv, err := daemon.ParseReady(s)
		if err != nil {
			p.Kill()
			tail, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("%s did not start: %s", name, lastLines(tail, 5))
		}
		p.Ready = kv
	case <-time.After(readyWait):
		p.Kill()
		return nil, fmt.Errorf("%s did not become ready within %v", name, readyWait)
	case <-ctx.Done():
		p.Kill()
		return nil, ctx.Err()
	}
	return p, nil
}

// readyWait bounds a daemon's start: a daemon that has not said ready by
// then is taken for hung. A start takes a second or two on a quiet
// machine; the bound leaves a busy one (tests beside other builds) room.
const readyWait = time.Minute

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

// Kill sends SIGKILL and waits for the process to go.
func (p *Daemon) Kill() {
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

// A Cluster is two modules and two parties as child processes on loopback.
type Cluster struct {
	bin, dir string
	opts     Options
	mods     [2]*Daemon
	parties  [2]*Daemon
	apps     [2]*client.Client
	// appTLS: the application's certificate files for party b's TLS
	// application API (nil: plaintext, on loopback or a Unix socket).
	appTLS  [2]*client.TLSFiles
	started int // processes started in all
	mu      sync.Mutex
}

// Options set up a cluster; the zero value is the default deployment.
type Options struct {
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

	// AppUnix: the parties serve the application on a Unix socket under
	// the cluster's directory (--listen unix:///path) instead of
	// loopback TCP.
	AppUnix bool
}

// CheckAppLink checks an --app-link value of a command that takes unix
// or tcp.
func CheckAppLink(link string) error {
	if link != "unix" && link != "tcp" {
		return fmt.Errorf("--app-link %q: want unix (a same-host application) or tcp (a remote one, over TLS)", link)
	}
	return nil
}

// AppLinkName says what an --app-link value (unix or tcp; Options.AppUnix)
// is, for reports.
func AppLinkName(link string) string {
	if link == "tcp" {
		return "tcp: TLS 1.3 with a client certificate (a remote application)"
	}
	return "unix: the parties' Unix socket, the application named by its uid (same host)"
}

// AppLink says how this cluster's applications reach the parties
// (AppLinkName).
func (c *Cluster) AppLink() string {
	if c.opts.AppUnix {
		return AppLinkName("unix")
	}
	return AppLinkName("tcp")
}

// appSock is party b's application socket (AppUnix).
func (c *Cluster) appSock(b int) string { return filepath.Join(c.dir, fmt.Sprintf("app%d.sock", b)) }

// appTarget is the address the application dials for a party that
// reported ready address addr: gRPC names a Unix socket unix:///path.
func appTarget(addr string) string {
	if filepath.IsAbs(addr) {
		return "unix://" + addr
	}
	return addr
}

func (c *Cluster) modArgs(b int) []string {
	args := []string{"module", "--party", strconv.Itoa(b), "--socket", c.sockPath(b), "--state", c.StatePath(b),
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

func (c *Cluster) sockPath(b int) string { return filepath.Join(c.dir, fmt.Sprintf("m%d.sock", b)) }

// StatePath is module b's state file.
func (c *Cluster) StatePath(b int) string { return filepath.Join(c.dir, fmt.Sprintf("m%d.db", b)) }

// PartyStatePath is party b's own state file (kord party --party-state).
func (c *Cluster) PartyStatePath(b int) string { return filepath.Join(c.dir, fmt.Sprintf("p%d.db", b)) }

// JournalPath is module b's journal of keystream positions (Journal).
func (c *Cluster) JournalPath(b int) string {
	return filepath.Join(c.dir, fmt.Sprintf("m%d.journal", b))
}
func (c *Cluster) logPath(name string) string {
	return filepath.Join(c.dir, name+".log")
}

// Start starts, connects and pairs the four processes in a fresh
// temporary directory (or dir, if given).
func Start(ctx context.Context, dir string, o Options) (_ *Cluster, err error) {
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
	c := &Cluster{bin: bin, dir: dir, opts: o}
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
		// As a production deployment: the peer link on mutual TLS, and
		// the application API on TLS with the demo application's client
		// certificate (under the same CA), which is also the operator
		// (it pairs the modules and reads Status).
		tdir := filepath.Join(dir, "tls")
		if err := peertls.InitApps(tdir, 24*time.Hour, []string{DemoApp}); err != nil {
			return nil, err
		}
		for b := range peerArgs {
			f := peertls.PartyFiles(tdir, b)
			peerArgs[b] = []string{"--tls-cert", f.Cert, "--tls-key", f.Key, "--tls-ca", f.CA}
			if !o.AppUnix {
				af := peertls.AppFiles(tdir, DemoApp)
				c.appTLS[b] = &client.TLSFiles{Cert: af.Cert, Key: af.Key, CA: af.CA, ServerName: peertls.PartyName(b)}
				peerArgs[b] = append(peerArgs[b], "--app-tls-cert", f.Cert, "--app-tls-key", f.Key, "--app-ca", f.CA, "--operator", DemoApp)
			}
		}
	}
	if o.AppUnix {
		// The kernel names the demo's uid (this process's) the demo
		// application.
		for b := range peerArgs {
			peerArgs[b] = append(peerArgs[b], "--app-uid", DemoApp+"="+strconv.Itoa(os.Getuid()), "--operator", DemoApp)
		}
	}
	for b := 0; b < 2 && !o.InProcessModules; b++ {
		if err := c.StartModule(ctx, b); err != nil {
			return nil, err
		}
	}
	common := func(b int) []string {
		a := []string{"party", "--party", strconv.Itoa(b), "--module", c.sockPath(b), "--listen", "127.0.0.1:0",
			"--metrics", "127.0.0.1:0", "--log-level", "warn", "--party-state", c.PartyStatePath(b)}
		if o.AppUnix {
			a[6] = "unix://" + c.appSock(b)
		}
		if o.InProcessModules {
			a[4] = moduleInProcess
			a = append(a, "--state", c.StatePath(b), "--secret-file", filepath.Join(c.dir, "secret"))
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
	p1, err := StartDaemon(ctx, 1, bin, "party1", c.logPath("party1"), append(common(1), "--peer-listen", "127.0.0.1:0")...)
	if err != nil {
		return nil, err
	}
	c.parties[1] = p1
	c.started++
	peer := p1.Ready["peer"]
	if o.PeerVia != nil {
		if peer, err = o.PeerVia(peer); err != nil {
			return nil, err
		}
	}
	p0, err := StartDaemon(ctx, 0, bin, "party0", c.logPath("party0"), append(common(0), "--peer", peer)...)
	if err != nil {
		return nil, err
	}
	c.parties[0] = p0
	c.started++
	for b := 0; b < 2; b++ {
		if c.apps[b], err = c.dialApp(b, c.parties[b].Ready["app"]); err != nil {
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
func (c *Cluster) StartModule(ctx context.Context, b int) error {
	p, err := StartDaemon(ctx, b, c.bin, fmt.Sprintf("module%d", b), c.logPath(fmt.Sprintf("module%d", b)), c.modArgs(b)...)
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
func (c *Cluster) KillModule(b int) {
	c.mu.Lock()
	p := c.mods[b]
	c.mods[b] = nil
	c.mu.Unlock()
	p.Kill()
}

// Stop asks the process to exit (SIGTERM) and kills it after a grace period.
func (p *Daemon) Stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(3 * time.Second):
		p.Kill()
	}
}

// Terminate sends SIGTERM and waits up to grace for the process to exit.
// It returns how long the process took and its exit code, or ok false
// (and the process killed) if it was still running after grace.
func (p *Daemon) Terminate(grace time.Duration) (took time.Duration, code int, ok bool) {
	t0 := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return time.Since(t0), p.cmd.ProcessState.ExitCode(), true
	case <-time.After(grace):
		p.Kill()
		return time.Since(t0), -1, false
	}
}

// Log is the daemon's log so far (its stderr) in the cluster.
func (c *Cluster) Log(name string) string {
	b, _ := os.ReadFile(c.logPath(name))
	return string(b)
}

// Dir is the cluster's directory.
func (c *Cluster) Dir() string { return c.dir }

// SocketPath is module b's socket.
func (c *Cluster) SocketPath(b int) string { return c.sockPath(b) }

// moduleInProcess is kord party's --module value that runs the module
// inside the party process.
const moduleInProcess = "in-process"

// Close stops every child and removes nothing (the caller owns dir).
func (c *Cluster) Close() {
	for b := 0; b < 2; b++ {
		if c.apps[b] != nil {
			c.apps[b].Close()
		}
	}
	for _, p := range []*Daemon{c.parties[0], c.parties[1], c.mods[0], c.mods[1]} {
		p.Stop()
	}
}

// LiveCPU is the user and system CPU time the cluster's running daemons
// have used so far (from /proc); ok is false if any could not be read.
func (c *Cluster) LiveCPU() (t time.Duration, ok bool) {
	ok = true
	for _, p := range []*Daemon{c.parties[0], c.parties[1], c.mods[0], c.mods[1]} {
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
func (c *Cluster) Remove() {
	c.Close()
	os.RemoveAll(c.dir)
}

// App is site b's client (replaced when its party restarts).
func (c *Cluster) App(b int) *client.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.apps[b]
}

// AppAddr is the address an application dials for party b.
func (c *Cluster) AppAddr(b int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return appTarget(c.parties[b].Ready["app"])
}

// Apps is both sites' clients.
func (c *Cluster) Apps() [2]*client.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.apps
}

// Started counts the processes started in all, restarts included.
func (c *Cluster) Started() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started
}

// Module is module b's process: nil while it is killed, and with
// InProcessModules.
func (c *Cluster) Module(b int) *Daemon {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mods[b]
}

// Party is party b's process.
func (c *Cluster) Party(b int) *Daemon {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.parties[b]
}

// KillParty kill -9s party b.
func (c *Cluster) KillParty(b int) *Daemon {
	c.mu.Lock()
	p := c.parties[b]
	c.mu.Unlock()
	p.Kill()
	return p
}

// RestartParty starts party b again as old ran, on the same addresses,
// and gives its site a new client.
func (c *Cluster) RestartParty(ctx context.Context, b int, old *Daemon) error {
	args := append([]string(nil), old.cmd.Args[1:]...)
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--listen":
			if !strings.HasPrefix(args[i+1], "unix://") { // a socket keeps its path
				args[i+1] = old.Ready["app"]
			}
		case "--metrics":
			args[i+1] = old.Ready["metrics"]
		case "--peer-listen":
			args[i+1] = old.Ready["peer"]
		}
	}
	var p *Daemon
	var err error
	for try := 0; try < 20; try++ { // a killed process's ports free at once, mostly
		if p, err = StartDaemon(ctx, b, c.bin, old.Name, c.logPath(old.Name), args...); err == nil {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	app, err := c.dialApp(b, p.Ready["app"])
	if err != nil {
		p.Kill()
		return err
	}
	c.mu.Lock()
	c.parties[b] = p
	prev := c.apps[b]
	c.apps[b] = app
	c.started++
	c.mu.Unlock()
	prev.Close() // its streams break and are sent again on the new client
	return nil
}

// DemoApp is the application identity of a cluster's client: its
// certificate's name (TLS) or its uid's (AppUnix), and the parties'
// --operator.
const DemoApp = "kord-demo"

// dialApp dials party b's application API at its ready address addr,
// with the cluster's application certificate when the API runs TLS.
func (c *Cluster) dialApp(b int, addr string) (*client.Client, error) {
	return client.DialParty(appTarget(addr), b, c.appTLS[b])
}

// AppTLS is the application's certificate files for party b's TLS
// application API (nil: plaintext).
func (c *Cluster) AppTLS(b int) *client.TLSFiles { return c.appTLS[b] }

// AppArgs are the flags a child process (kord infer party) needs to dial
// party b's application API as the cluster's application: none when it
// is plaintext.
func (c *Cluster) AppArgs(b int) []string {
	f := c.appTLS[b]
	if f == nil {
		return nil
	}
	return []string{"--app-tls-cert", f.Cert, "--app-tls-key", f.Key, "--app-ca", f.CA, "--app-server-name", f.ServerName}
}
