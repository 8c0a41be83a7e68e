package llamaexport

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/fss/llama"
	"github.com/kord-fss/kord/internal/both"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/service/servicetest"
)

// TestExportInProcess: keys exported from an in-process module pair read
// back at the sizes params.json gives and reconstruct with the shares:
// every pair evaluates to β·[x < α] with α the sum of the two shares.
func TestExportInProcess(t *testing.T) {
	dir := t.TempDir()
	rep, e := exportRead(t, context.Background(), Config{Dir: dir, Keys: 300, InBits: 32, OutBits: 32, Beta: 1})
	if !reflect.DeepEqual(e.Params, Params{Profile: "llama", Type: "dcf", InBits: 32, OutBits: 32, Group: 1, Keys: 300, Beta: []uint64{1}}) {
		t.Fatalf("params %+v", e.Params)
	}
	if int64(len(e.Keys[0])) != rep.DatBytes || rep.KeyBytes != e.Params.Llama().KeySize() {
		t.Fatalf("report %+v, server.dat %d bytes", rep, len(e.Keys[0]))
	}
	if err := e.Verify(1); err != nil {
		t.Fatal(err)
	}
	if err := e.Verify(2); err == nil || !strings.Contains(err.Error(), "made for β = [1]") {
		t.Fatalf("the keys verify for another β, or the failure does not name the β they were made for: %v", err)
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
	if got := strings.TrimSpace(string(js)); got != `{"profile":"llama","type":"dcf","in_bits":32,"out_bits":32,"group":1,"keys":300,"beta":[1]}` {
		t.Fatalf("params.json: %s", got)
	}
	// A second export into the same directory is refused (nothing
	// replaced) unless forced.
	before, _ := os.ReadFile(filepath.Join(dir, ServerDat))
	if _, err := Export(context.Background(), Config{Dir: dir, Keys: 3, InBits: 32, OutBits: 32, Beta: 1}); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("an export over an export: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, ServerDat)); !bytes.Equal(before, after) {
		t.Fatal("a refused export changed server.dat")
	}
	if _, err := Export(context.Background(), Config{Dir: dir, Keys: 3, InBits: 32, OutBits: 32, Beta: 1, Force: true}); err != nil {
		t.Fatalf("a forced export: %v", err)
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

// startParties runs two paired party services over gRPC on loopback TCP
// (servicetest), each with its durable module, and returns their
// application addresses.
func startParties(t *testing.T) [2]string {
	t.Helper()
	return servicetest.Start(t, 64, nil).Addrs
}

// TestExportFromParties: keys exported from two party services (real
// gRPC, in this process) reconstruct with the shares; more keys than one
// request carries, so the export spans several requests.
func TestExportFromParties(t *testing.T) {
	addrs := startParties(t)
	ctx := context.Background()
	dir := t.TempDir()
	const n = perRequest + 100
	_, e := exportRead(t, ctx, Config{Dir: dir, Keys: n, InBits: 20, OutBits: 16, Beta: 7, Party0: addrs[0], Party1: addrs[1]})
	if err := e.Verify(7); err != nil {
		t.Fatal(err)
	}
}

// TestExportVector: an export with a payload vector (G = 19, as LLAMA's
// largest vector) from the in-process module pair: params.json says the
// group, the .dat files hold keys of that shape, and every pair
// evaluates to β_j·[x < α] for each element; bad vectors are refused
// naming what is wrong, before any file is written.
func TestExportVector(t *testing.T) {
	dir := t.TempDir()
	betas := make([]uint64, 19)
	for j := range betas {
		betas[j] = uint64(j*13+1) & 0xff
	}
	rep, e := exportRead(t, context.Background(), Config{Dir: dir, Keys: 70, InBits: 16, OutBits: 8, Betas: betas})
	if !reflect.DeepEqual(e.Params, Params{Profile: "llama", Type: "dcf", InBits: 16, OutBits: 8, Group: 19, Keys: 70, Beta: betas}) {
		t.Fatalf("params %+v", e.Params)
	}
	if rep.KeyBytes != 17*(16+19) {
		t.Fatalf("key bytes %d, want %d", rep.KeyBytes, 17*(16+19))
	}
	if err := e.VerifyVec(betas); err != nil {
		t.Fatal(err)
	}
	other := append([]uint64(nil), betas...)
	other[18]++
	if e.VerifyVec(other) == nil {
		t.Fatal("the keys verify for another last element")
	}
	if err := e.Verify(1); err == nil || !strings.Contains(err.Error(), "group is 19") {
		t.Fatalf("a one-element verify of a group-19 export: %v", err)
	}
	for _, c := range []struct {
		c    Config
		want string
	}{
		{Config{Dir: dir, Keys: 1, InBits: 8, OutBits: 8, Betas: []uint64{1, 256}}, "beta element 1: 256 does not fit in 8 output bits"},
		{Config{Dir: dir, Keys: 1, InBits: 8, OutBits: 8, Betas: make([]uint64, 65)}, "65 payload elements, at most 64"},
		{Config{Dir: dir, Keys: 1, InBits: 8, OutBits: 8, Beta: 1, Betas: []uint64{1, 2}}, "not both"},
		{Config{Dir: dir, Keys: 1, InBits: 8, OutBits: 8, Betas: []uint64{1}}, "goes in Beta"},
	} {
		if _, err := Export(context.Background(), c.c); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error naming %q", c.c, err, c.want)
		}
	}
}

// TestExportVectorFromParties: a payload-vector export from two party
// services (real gRPC, durable modules): the requests carry the vector,
// the daemons make each as one bulk, and every pair evaluates to
// β_j·[x < α] with the exported α shares.
func TestExportVectorFromParties(t *testing.T) {
	addrs := startParties(t)
	ctx := context.Background()
	dir := t.TempDir()
	betas := []uint64{1, 0xffff, 0, 0x1234, 7}
	_, e := exportRead(t, ctx, Config{Dir: dir, Keys: 300, InBits: 20, OutBits: 16, Betas: betas, Party0: addrs[0], Party1: addrs[1]})
	if e.Params.Group != 5 {
		t.Fatalf("params %+v", e.Params)
	}
	if err := e.VerifyVec(betas); err != nil {
		t.Fatal(err)
	}
	if e.Alpha(0) == e.Alpha(1) && e.Alpha(1) == e.Alpha(2) {
		t.Fatal("three equal α in a row")
	}
}

// TestBoundVectorFromParties: bound llama requests with a payload vector
// through two party services and the Go client (client.BoundVector): each
// site gives its shares of α and of every element, the keys come back as
// LLAMA's bytes and evaluate to β_j·[x < α]; a bad vector is refused at
// the site with an error naming the field, before its module is asked
// (the module's next counter does not move).
func TestBoundVectorFromParties(t *testing.T) {
	cl := servicetest.Start(t, 64, nil).Apps
	ctx := context.Background()
	p := fss.Params{Type: fss.DCF, InBits: 24, OutBits: 20}
	const g = 19
	alpha := uint64(0x9abcd)
	beta := make([]uint64, g)
	var bs [2][]uint64
	for j := range beta {
		beta[j] = uint64(j*77777+3) & prg.Mask(20)
		s0 := uint64(j*31337) & prg.Mask(20)
		bs[0], bs[1] = append(bs[0], s0), append(bs[1], (beta[j]-s0)&prg.Mask(20))
	}
	as := [2]uint64{12345, (alpha - 12345) & prg.Mask(24)}
	reps, err := both.Pair(func(b int) (*client.Reply, error) {
		rep, err := cl[b].Get(ctx, client.BoundVector(77, msg.MAC, p, as[b], bs[b]))
		if err == nil {
			err = rep.Err
		}
		return rep, err
	})
	if err != nil {
		t.Fatal(err)
	}
	var keys [2][]byte
	for b, rep := range reps {
		if len(rep.Shares) == 1 {
			keys[b] = rep.Shares[0].Raw
		}
	}
	lp := msg.LlamaParamsG(p, g)
	if len(keys[0]) != lp.KeySize() {
		t.Fatalf("key of %d bytes, want %d", len(keys[0]), lp.KeySize())
	}
	if err := llama.CheckPair(lp, keys[0], keys[1], alpha, beta); err != nil {
		t.Fatal(err)
	}
	st, err := cl[0].Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := st.String()
	for _, c := range []struct {
		r    *pb.KeyRequest
		want string
	}{
		{client.BoundVector(80, 0, p, 1, make([]uint64, msg.MaxGroup+1)), "group: 65 is outside 2..64"},
		{client.BoundVector(81, 0, p, 1, []uint64{1, 1 << 20}), "beta_shares[1]: does not fit in 20 output bits"},
		{func() *pb.KeyRequest { r := client.BoundVector(82, 0, p, 1, []uint64{1, 2}); r.Group = 3; return r }(), "beta_shares: 2 shares, want group = 3"},
		{func() *pb.KeyRequest { r := client.BoundVector(83, 0, p, 1, []uint64{1, 2}); r.Group = 0; return r }(), "group: 0 is outside 2..64"},
		{client.WithProfile(client.BoundVector(84, 0, p, 1, []uint64{1, 2}), msg.KordV1), "needs profile llama"},
		{func() *pb.KeyRequest {
			r := client.DerivedVector(85, p, 1, []uint64{1, 2})
			r.DeriveBeta = true
			return r
		}(), "betas: must be empty with derive_beta"},
		{client.DerivedVector(86, p, 1, []uint64{1, 2, 3, 1 << 20}), "betas[3]: does not fit"},
	} {
		rep, err := cl[0].Get(ctx, c.r)
		if err == nil {
			err = rep.Err
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("request %d: got %v, want an error naming %q", c.r.Id, err, c.want)
		}
	}
	if st, err = cl[0].Status(ctx); err != nil || st.String() != before {
		t.Fatalf("refused requests moved the party: %v\n%s\n%s", err, before, st)
	}
}

// TestVectorMismatchFromParties: two sites that ask for different public
// payload vectors under one id (or a vector against one element) get no
// keys: the group and the elements are in the batch item both sites
// compare.
func TestVectorMismatchFromParties(t *testing.T) {
	cl := servicetest.Start(t, 64, nil).Apps
	ctx := context.Background()
	p := fss.Params{Type: fss.DCF, InBits: 16, OutBits: 16}
	for i, rs := range [][2]*pb.KeyRequest{
		{client.DerivedVector(90, p, 3, []uint64{1, 2}), client.DerivedVector(90, p, 3, []uint64{1, 3})},
		{client.DerivedVector(91, p, 3, []uint64{1, 0}), client.WithProfile(client.Derived(91, p, 3, 1, false), msg.Llama)},
	} {
		var errs [2]error
		both.Each(func(b int) error {
			cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			rep, err := cl[b].Get(cctx, rs[b])
			if err == nil {
				err = rep.Err
			}
			errs[b] = err
			return nil
		})
		if errs[0] == nil || errs[1] == nil {
			t.Fatalf("case %d: sites with different payloads got keys: %v, %v", i, errs[0], errs[1])
		}
		t.Logf("case %d: %v / %v", i, errs[0], errs[1])
	}
}

// TestMixedBatchFromParties: one stream per site mixing payload-vector
// requests with one-element llama and kord-v1 requests (so a batch holds
// vector bulks beside ordinary runs and per-key requests): every request
// is answered in order, and each llama pair evaluates to its payload.
func TestMixedBatchFromParties(t *testing.T) {
	addrs := startParties(t)
	ctx := context.Background()
	p := fss.Params{Type: fss.DCF, InBits: 16, OutBits: 16}
	vec := []uint64{5, 6, 7}
	build := func() []*pb.KeyRequest {
		var rs []*pb.KeyRequest
		for i := range 12 {
			id := uint64(1000 + i)
			switch i % 4 {
			case 0:
				rs = append(rs, client.DerivedVector(id, p, 1+i, vec))
			case 1:
				rs = append(rs, client.WithProfile(client.Derived(id, p, 10, 9, false), msg.Llama))
			case 2:
				rs = append(rs, client.Derived(id, p, 2, 3, false))
			default:
				rs = append(rs, client.DerivedVector(id, p, 1, vec[:2]))
			}
		}
		return rs
	}
	reps, err := both.Pair(func(b int) ([]*client.Reply, error) {
		cl, err := client.Dial(addrs[b], nil)
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		st, err := cl.Stream(ctx)
		if err != nil {
			return nil, err
		}
		rs := build()
		if err := st.SendBatch(rs); err != nil {
			return nil, err
		}
		var reps []*client.Reply
		for range rs {
			rep, err := st.Recv()
			if err == nil {
				err = rep.Err
			}
			if err != nil {
				return reps, err
			}
			reps = append(reps, rep)
		}
		st.CloseSend()
		return reps, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range build() {
		r0, r1 := reps[0][i], reps[1][i]
		if r0.ID != r.Id || r1.ID != r.Id || len(r0.Shares) != len(r1.Shares) || len(r0.Shares) != int(max(r.Count, 1)) {
			t.Fatalf("request %d: replies %d/%d with %d/%d keys", r.Id, r0.ID, r1.ID, len(r0.Shares), len(r1.Shares))
		}
		if r.Profile != "llama" {
			continue
		}
		payload := r.Betas
		if r.Group == 0 {
			payload = []uint64{r.Beta}
		}
		lp := msg.LlamaParamsG(p, len(payload))
		for k := range r0.Shares {
			a := (r0.Shares[k].AlphaShare + r1.Shares[k].AlphaShare) & prg.Mask(16)
			if err := llama.CheckPair(lp, r0.Shares[k].Raw, r1.Shares[k].Raw, a, payload); err != nil {
				t.Fatalf("request %d key %d: %v", r.Id, k, err)
			}
		}
	}
}

// exportRead exports c and reads the export back from c.Dir.
func exportRead(t *testing.T, ctx context.Context, c Config) (*Report, *Files) {
	t.Helper()
	rep, err := Export(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	e, err := Read(c.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return rep, e
}
