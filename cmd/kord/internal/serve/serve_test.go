package serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/daemon"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/provision"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// started is a daemon run in this test's process: its readiness record
// and the error it returned once stopped.
type started struct {
	ready map[string]string
	done  chan error
}

// run runs serve in a goroutine and waits for its readiness record.
func run(t *testing.T, ctx context.Context, name string, serve func(out io.Writer) error) *started {
	t.Helper()
	pr, pw := io.Pipe()
	s := &started{done: make(chan error, 1)}
	go func() {
		err := serve(pw)
		pw.CloseWithError(errors.New(name + " returned"))
		s.done <- err
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("%s: no readiness record: %v (returned: %v)", name, err, <-s.done)
	}
	go io.Copy(io.Discard, pr)
	if s.ready, err = daemon.ParseReady(line); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// stop waits for a daemon whose context was cancelled to return nil.
func (s *started) stop(t *testing.T, name string) {
	t.Helper()
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("%s stopped with %v, want nil", name, err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("%s did not stop after its context was cancelled", name)
	}
}

func writeSecret(t *testing.T, dir string) string {
	t.Helper()
	secret := provision.New()
	text, err := provision.Encode(secret)
	clear(secret)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "secret")
	if err := os.WriteFile(path, []byte(text+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestModulesAndPartiesServeKeys runs both sites as the daemons run them
// (two modules on their sockets, two parties over a plaintext peer link),
// pairs them and checks that bound and derived keys delivered to the two
// applications pair, and that each daemon removes what it served on once
// its context ends.
func TestModulesAndPartiesServeKeys(t *testing.T) {
	for _, inProcess := range []bool{false, true} {
		name := "module process"
		if inProcess {
			name = "module in-process"
		}
		t.Run(name, func(t *testing.T) { testServe(t, inProcess) })
	}
}

func testServe(t *testing.T, inProcess bool) {
	dir := t.TempDir()
	secret := writeSecret(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mods [2]*started
	var files [2]daemon.ModuleFiles
	var sockets [2]string
	for b := range 2 {
		files[b] = daemon.ModuleFiles{Party: b, State: filepath.Join(dir, fmt.Sprintf("m%d.db", b)), SecretFile: secret}
		sockets[b] = filepath.Join(dir, fmt.Sprintf("m%d.sock", b))
		if inProcess {
			continue
		}
		// Each module its own copy of the secret (as the chart's tmpfs
		// copies), removed once it is paired.
		own := filepath.Join(dir, fmt.Sprintf("secret%d", b))
		text, err := os.ReadFile(secret)
		if err != nil || os.WriteFile(own, text, 0o600) != nil {
			t.Fatal(err)
		}
		files[b].SecretFile = own
		c := ModuleConfig{Files: files[b], Socket: sockets[b], AllowSameUID: true, LogLevel: "error", RemoveSecretAfterPairing: true}
		mods[b] = run(t, ctx, "module", func(out io.Writer) error { c.Out = out; return Module(ctx, c) })
		if mods[b].ready["socket"] != sockets[b] {
			t.Fatalf("module %d ready on %q, want %q", b, mods[b].ready["socket"], sockets[b])
		}
	}
	party := func(b int, peer string) *started {
		c := PartyConfig{Party: b, Module: sockets[b], ModuleTimeout: 10 * time.Second, Listen: "127.0.0.1:0",
			PeerPlaintext: true, LogLevel: "error"}
		if inProcess {
			c.Module, c.InProcess = ModuleInProcess, files[b]
		}
		if b == 1 {
			c.PeerListen = "127.0.0.1:0"
		} else {
			c.Peer = peer
		}
		return run(t, ctx, "party", func(out io.Writer) error { c.Out = out; return Party(ctx, c) })
	}
	p1 := party(1, "")
	if p1.ready["peer"] == "" {
		t.Fatalf("party 1's readiness record names no peer address: %v", p1.ready)
	}
	p0 := party(0, p1.ready["peer"])
	var apps [2]*client.Client
	for b, p := range []*started{p0, p1} {
		c, err := client.Dial(p.ready["app"], nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		apps[b] = c
	}
	pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
	defer pcancel()
	for b := range 2 {
		if _, err := os.Stat(files[b].SecretFile); err != nil {
			t.Fatalf("module %d's secret file before pairing: %v", b, err)
		}
	}
	if err := apps[0].Pair(pctx); err != nil {
		t.Fatalf("pairing: %v", err)
	}
	if !inProcess {
		// --remove-secret-after-pairing: both copies go once paired.
		for b := range 2 {
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, err := os.Stat(files[b].SecretFile)
				if errors.Is(err, os.ErrNotExist) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("module %d's secret file still there after pairing (%v)", b, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}

	p := fss.Params{Type: fss.DCF, InBits: 16, OutBits: 32}
	const alpha, beta = 0x1234, 77
	a0, b0 := uint64(0x0f0f), uint64(5)
	a1, b1 := (alpha-a0)&0xffff, (beta-b0)&0xffffffff
	replies := [2][]*client.Reply{}
	get := func(rs [2]func() *client.Reply) {
		var wg sync.WaitGroup
		var got [2]*client.Reply
		for b := range 2 {
			wg.Go(func() { got[b] = rs[b]() })
		}
		wg.Wait()
		replies[0], replies[1] = append(replies[0], got[0]), append(replies[1], got[1])
	}
	bound := [2]uint64{a0, a1}
	boundB := [2]uint64{b0, b1}
	get([2]func() *client.Reply{
		func() *client.Reply {
			return mustGet(t, pctx, apps[0], client.Bound(1, msg.Keystream, p, bound[0], boundB[0]))
		},
		func() *client.Reply {
			return mustGet(t, pctx, apps[1], client.Bound(1, msg.Keystream, p, bound[1], boundB[1]))
		},
	})
	get([2]func() *client.Reply{
		func() *client.Reply { return mustGet(t, pctx, apps[0], client.Derived(2, p, 4, beta, false)) },
		func() *client.Reply { return mustGet(t, pctx, apps[1], client.Derived(2, p, 4, beta, false)) },
	})
	if t.Failed() {
		t.FailNow()
	}
	xs := []uint64{0, alpha - 1, alpha, alpha + 1, 0xffff}
	s0, s1 := replies[0][0].Shares[0], replies[1][0].Shares[0]
	if err := fss.CheckPair(s0.Key, s1.Key, alpha, beta, xs...); err != nil {
		t.Errorf("bound key: %v", err)
	}
	for i := range replies[0][1].Shares {
		d0, d1 := replies[0][1].Shares[i], replies[1][1].Shares[i]
		if d0.Counter != d1.Counter {
			t.Fatalf("derived key %d: counters %d and %d differ", i, d0.Counter, d1.Counter)
		}
		r := (d0.AlphaShare + d1.AlphaShare) & 0xffff
		if err := fss.CheckPair(d0.Key, d1.Key, r, beta, 0, r, (r+1)&0xffff, 0xffff); err != nil {
			t.Errorf("derived key %d: %v", i, err)
		}
	}

	cancel()
	p0.stop(t, "party 0")
	p1.stop(t, "party 1")
	for b, m := range mods {
		if m == nil {
			continue
		}
		m.stop(t, "module")
		if _, err := os.Stat(sockets[b]); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("module %d left its socket behind (stat: %v)", b, err)
		}
	}
}

// mustGet asks c for r; it may run outside the test's goroutine, so a
// failure is reported with Errorf and answered with an empty reply.
func mustGet(t *testing.T, ctx context.Context, c *client.Client, r *pb.KeyRequest) *client.Reply {
	rep, err := c.Get(ctx, r)
	if err == nil {
		err = rep.Err
	}
	if err != nil {
		t.Errorf("request %d: %v", r.Id, err)
		return &client.Reply{}
	}
	return rep
}

// TestBadSettingsAreUsageErrors checks that the settings a command cannot
// check before it starts the daemon come back as daemon.UsageErrors that
// name the setting, before anything is opened.
func TestBadSettingsAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	files := daemon.ModuleFiles{Party: 0, State: filepath.Join(dir, "m0.db"), SecretFile: writeSecret(t, dir)}
	ctx := context.Background()
	cases := []struct {
		name, want string
		run        func() error
	}{
		{"module log level", "--log-level", func() error {
			return Module(ctx, ModuleConfig{Files: files, Socket: filepath.Join(dir, "a.sock"), AllowSameUID: true, LogLevel: "loud", Out: io.Discard})
		}},
		{"module socket group", "--socket-group", func() error {
			return Module(ctx, ModuleConfig{Files: files, Socket: filepath.Join(dir, "b.sock"), AllowSameUID: true,
				SocketGroup: "no-such-group-kord", LogLevel: "error", Out: io.Discard})
		}},
		{"party log level", "--log-level", func() error {
			return Party(ctx, PartyConfig{Party: 0, Module: filepath.Join(dir, "m0.sock"), Listen: "127.0.0.1:0",
				PeerPlaintext: true, LogLevel: "loud", Out: io.Discard})
		}},
		{"party TLS files", "--tls", func() error {
			return Party(ctx, PartyConfig{Party: 0, Module: filepath.Join(dir, "m0.sock"), Listen: "127.0.0.1:0",
				TLSCert: filepath.Join(dir, "missing.crt"), LogLevel: "error", Out: io.Discard})
		}},
	}
	for _, c := range cases {
		err := c.run()
		var ue daemon.UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%s: got %v, want a daemon.UsageError", c.name, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not name %s", c.name, err, c.want)
		}
	}
	if _, err := os.Stat(files.State); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused start created the state file (stat: %v)", err)
	}
}
