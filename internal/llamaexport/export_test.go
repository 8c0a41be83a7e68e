package llamaexport

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/kord-fss/kord/module/moduletest"
	"github.com/kord-fss/kord/module/socket"
	"github.com/kord-fss/kord/service"
)

// TestExportInProcess: keys exported from an in-process module pair read
// back at the sizes params.json gives and reconstruct with the shares:
// every pair evaluates to β·[x < α] with α the sum of the two shares.
func TestExportInProcess(t *testing.T) {
	dir := t.TempDir()
	rep, err := Export(context.Background(), Config{Dir: dir, Keys: 300, InBits: 32, OutBits: 32, Beta: 1})
	if err != nil {
		t.Fatal(err)
	}
	e, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if e.Params != (Params{Profile: "llama", Type: "dcf", InBits: 32, OutBits: 32, Group: 1, Keys: 300}) {
		t.Fatalf("params %+v", e.Params)
	}
	if int64(len(e.Keys[0])) != rep.DatBytes || rep.KeyBytes != e.Params.Llama().KeySize() {
		t.Fatalf("report %+v, server.dat %d bytes", rep, len(e.Keys[0]))
	}
	if err := e.Verify(1); err != nil {
		t.Fatal(err)
	}
	if e.Verify(2) == nil {
		t.Fatal("the keys verify for another β")
	}
	// The α are the modules' draws: not all equal.
	if e.Alpha(0) == e.Alpha(1) && e.Alpha(1) == e.Alpha(2) {
		t.Fatal("three equal α in a row")
	}
	for _, name := range []string{ServerDat, ClientShares} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Fatalf("%s has mode %v, want 0600 (it holds one party's secrets)", name, st.Mode().Perm())
		}
	}
	js, _ := os.ReadFile(filepath.Join(dir, ParamsJSON))
	if got := strings.TrimSpace(string(js)); got != `{"profile":"llama","type":"dcf","in_bits":32,"out_bits":32,"group":1,"keys":300}` {
		t.Fatalf("params.json: %s", got)
	}
}

// TestReadBackWrongSize: a .dat file of the wrong size, a share file of
// the wrong length or a share too wide is a clear error naming the file.
func TestReadBackWrongSize(t *testing.T) {
	dir := t.TempDir()
	if _, err := Export(context.Background(), Config{Dir: dir, Keys: 5, InBits: 16, OutBits: 12, Beta: 3}); err != nil {
		t.Fatal(err)
	}
	server := filepath.Join(dir, ServerDat)
	orig, _ := os.ReadFile(server)
	shares := filepath.Join(dir, ClientShares)
	origShares, _ := os.ReadFile(shares)
	for _, c := range []struct {
		name, file string
		data       []byte
		want       string
	}{
		{"one byte short", server, orig[:len(orig)-1], "not a whole number of keys"},
		{"one key more", server, append(append([]byte(nil), orig...), orig[:len(orig)/5]...), "holds 6 whole keys"},
		{"a value above Bout", server, func() []byte {
			b := append([]byte(nil), orig...)
			b[len(b)-1] = 0xff // the high byte of key 4's last v: Bout 12 in 2 bytes
			return b
		}(), "key 4: llama: value has bits set at or above Bout"},
		{"a share line missing", shares, origShares[:strings.LastIndex(strings.TrimSuffix(string(origShares), "\n"), "\n")+1], "has 4 lines, want 5"},
		{"a share too wide", shares, []byte("70000\n1\n2\n3\n4\n"), "does not fit in 16 input bits"},
		{"not a number", shares, []byte("x\n1\n2\n3\n4\n"), "not a decimal share"},
	} {
		if err := os.WriteFile(c.file, c.data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Read(dir)
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Base(c.file)) {
			t.Fatalf("%s: got %v, want an error naming %s and %q", c.name, err, filepath.Base(c.file), c.want)
		}
		os.WriteFile(server, orig, 0o600)
		os.WriteFile(shares, origShares, 0o600)
	}
}

// TestConfigRefused: bad configurations name the flag.
func TestConfigRefused(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Keys: 1, InBits: 8, OutBits: 8}, "dir"},
		{Config{Dir: "d", Keys: 0, InBits: 8, OutBits: 8}, "keys"},
		{Config{Dir: "d", Keys: 1, InBits: 65, OutBits: 8}, "in-bits"},
		{Config{Dir: "d", Keys: 1, InBits: 8, OutBits: 0}, "out-bits"},
		{Config{Dir: "d", Keys: 1, InBits: 8, OutBits: 8, Beta: 256}, "beta"},
		{Config{Dir: "d", Keys: 1, InBits: 8, OutBits: 8, Party0: "x"}, "party0/party1"},
	} {
		if err := c.cfg.Validate(); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v", c.cfg, err)
		}
	}
}

// startParties runs two paired party services over gRPC on loopback TCP,
// each with its durable module, and returns their application addresses.
func startParties(t *testing.T) [2]string {
	t.Helper()
	dir := t.TempDir()
	var addrs [2]string
	peer := ""
	for _, party := range []int{1, 0} {
		d, st := moduletest.OpenDurable(t, party, filepath.Join(dir, []string{"m0.db", "m1.db"}[party]), 0, moduletest.Secret)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p, err := service.New(service.Config{Party: party, Module: socket.Local(d), PeerAddr: peer, PeerPlaintext: true, Batch: 64, InFlight: 2})
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		p.Register(srv, srv)
		go srv.Serve(l)
		ctx, cancel := context.WithCancel(context.Background())
		go p.Run(ctx)
		t.Cleanup(func() { cancel(); srv.Stop(); p.Close(); st.Close() })
		addrs[party] = l.Addr().String()
		peer = addrs[party]
	}
	return addrs
}

// TestExportFromParties: keys exported from two party services (real
// gRPC, in this process) reconstruct with the shares; more keys than one
// request carries, so the export spans several requests.
func TestExportFromParties(t *testing.T) {
	addrs := startParties(t)
	ctx := context.Background()
	if err := pair(ctx, addrs[0]); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const n = perRequest + 100
	if _, err := Export(ctx, Config{Dir: dir, Keys: n, InBits: 20, OutBits: 16, Beta: 7, Party0: addrs[0], Party1: addrs[1]}); err != nil {
		t.Fatal(err)
	}
	e, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Verify(7); err != nil {
		t.Fatal(err)
	}
}
