// Package llamagates writes dealerless EzPC LLAMA gate key packs — ReLU,
// ARS (ScaleDown) and pair-MaxPool — as the files a LLAMA program reads
// its dealer's output from (`kord llama gates`), and reads and verifies
// them (`kord llama verify` of a gates directory).
//
// A gates directory holds, for N1 ReLU, N2 ARS-by-S and N3 MaxPool packs
// of width BW (shared/spec/llama/gates.md has the layouts):
//
//	server.dat          party 0's packs, LLAMA's layout, end to end: N1 ReLU, N2 ARS, N3 MaxPool; no header
//	client.dat          party 1's, likewise
//	server.masks.json   party 0's additive shares of the masks mod 2^BW, decimal strings:
//	                    {"relu":{"r_in":[…],"r_out":[…]},"ars":{…},"maxpool":{"r_in":[2·N3],"r_out":[N3]}}
//	client.masks.json   party 1's, likewise
//	params.json         {"profile":"llama","type":"gates","bits","relu","ars","shift","maxpool"}
//
// The packs come from two party daemons (their application addresses)
// or, without addresses, an in-process module pair (host.LocalPair):
// either way the masks are drawn inside the two modules, and no process
// but the two modules ever holds both parties' packs or a mask.
package llamagates

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss/llama"
	"github.com/kord-fss/kord/host"
	"github.com/kord-fss/kord/internal/both"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// File names inside a gates directory.
const (
	ServerDat   = "server.dat"
	ClientDat   = "client.dat"
	ServerMasks = "server.masks.json"
	ClientMasks = "client.masks.json"
	ParamsJSON  = "params.json"
)

// MaxPacks bounds each count of one directory (2^24 packs: some 60 GiB
// per .dat file at 64 bits).
const MaxPacks = 1 << 24

// ErrBadInput marks a configuration or file that is wrong; the message
// names the flag or file.
var ErrBadInput = errors.New("llamagates: bad input")

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadInput, fmt.Sprintf(format, args...))
}

// Config is one `kord llama gates` run.
type Config struct {
	Dir                string
	Bits               int // BW, 8..64
	Relu, Ars, MaxPool int // N1, N2, N3
	Shift              int // S, 1 ≤ S < BW (required when Ars > 0)
	Party0, Party1     string
	// AppTLS: the parties' application API runs TLS and this is the
	// application's certificate, key and CA (nil: plaintext).
	AppTLS          *client.TLSFiles
	PacksPerRequest int // packs one request asks for (0: msg.MaxGatePacks)
}

// Validate reports what is wrong with c, naming the flag.
func (c Config) Validate() error {
	switch {
	case c.Dir == "":
		return bad("--dir: no output directory given")
	case c.Bits < llama.MinGateBits || c.Bits > llama.MaxGateBits:
		return bad("--bits: %d is outside %d..%d", c.Bits, llama.MinGateBits, llama.MaxGateBits)
	case c.Relu < 0 || c.Relu > MaxPacks:
		return bad("--relu: %d is outside 0..%d", c.Relu, MaxPacks)
	case c.Ars < 0 || c.Ars > MaxPacks:
		return bad("--ars: %d is outside 0..%d", c.Ars, MaxPacks)
	case c.MaxPool < 0 || c.MaxPool > MaxPacks:
		return bad("--maxpool: %d is outside 0..%d", c.MaxPool, MaxPacks)
	case c.Relu+c.Ars+c.MaxPool == 0:
		return bad("--relu/--ars/--maxpool: no packs asked for")
	case c.Ars > 0 && (c.Shift < 1 || c.Shift >= c.Bits):
		return bad("--shift: %d is outside 1..%d (1 ≤ shift < bits)", c.Shift, c.Bits-1)
	case c.Shift != 0 && (c.Shift < 1 || c.Shift >= c.Bits):
		return bad("--shift: %d is outside 1..%d (1 ≤ shift < bits)", c.Shift, c.Bits-1)
	case (c.Party0 == "") != (c.Party1 == ""):
		return bad("--party0/--party1: give both party addresses, or neither for an in-process module pair")
	case c.PacksPerRequest < 0 || c.PacksPerRequest > msg.MaxGatePacks:
		return bad("packs per request: %d is outside 0..%d", c.PacksPerRequest, msg.MaxGatePacks)
	}
	return nil
}

// Params is params.json.
type Params struct {
	Profile string `json:"profile"`
	Type    string `json:"type"`
	Bits    int    `json:"bits"`
	Relu    int    `json:"relu"`
	Ars     int    `json:"ars"`
	Shift   int    `json:"shift"`
	MaxPool int    `json:"maxpool"`
}

// Runs returns the directory's gate shapes and counts in file order
// (empty runs included, with count 0).
func (p Params) Runs() [3]Run {
	return [3]Run{
		{"relu", llama.Gate{Kind: llama.GateReLU, Bits: p.Bits}, p.Relu},
		{"ars", llama.Gate{Kind: llama.GateARS, Bits: p.Bits, Shift: p.Shift}, p.Ars},
		{"maxpool", llama.Gate{Kind: llama.GateMaxPool, Bits: p.Bits}, p.MaxPool},
	}
}

// Run is one gate's packs in a directory.
type Run struct {
	Name string
	G    llama.Gate
	N    int
}

// DatBytes is each .dat file's size.
func (p Params) DatBytes() int64 {
	var n int64
	for _, r := range p.Runs() {
		if r.N > 0 {
			n += int64(r.N) * int64(r.G.PackSize())
		}
	}
	return n
}

// MaskSet is one gate's masks in a masks file.
type MaskSet struct {
	RIn  []string `json:"r_in"`
	ROut []string `json:"r_out"`
}

// Masks is a masks file: one party's additive shares of every mask.
type Masks struct {
	Relu    MaskSet `json:"relu"`
	Ars     MaskSet `json:"ars"`
	MaxPool MaskSet `json:"maxpool"`
}

func (m *Masks) set(i int) *MaskSet { return [3]*MaskSet{&m.Relu, &m.Ars, &m.MaxPool}[i] }

// Report says what a run wrote.
type Report struct {
	Dir      string `json:"dir"`
	Source   string `json:"source"`
	Packs    int    `json:"packs"`
	DatBytes int64  `json:"dat_bytes"`
}

// request is one gates request of a run: count packs of gate run.
type request struct {
	run, count int
}

// requests cuts the run into requests of at most per packs, in file
// order, each of one gate.
func requests(p Params, per int) []request {
	var out []request
	for i, r := range p.Runs() {
		for done := 0; done < r.N; {
			n := min(r.N-done, per)
			out = append(out, request{i, n})
			done += n
		}
	}
	return out
}

func (r request) corr(p Params) msg.Correlation {
	c := msg.Correlation{Kind: msg.CorrLlamaGates, Ring: p.Bits}
	switch r.run {
	case 0:
		c.Relu = r.count
	case 1:
		c.Ars, c.Shift = r.count, p.Shift
	default:
		c.MaxPool = r.count
	}
	return c
}

// sink is where one party's packs and mask shares go.
type sink struct {
	dat   [2]*os.File
	masks [2]Masks
	mu    sync.Mutex
}

// put appends party b's answer to request r.
func (s *sink) put(b int, r request, sh *msg.CorrShares) error {
	if _, err := s.dat[b].Write(sh.Packs); err != nil {
		return err
	}
	set := s.masks[b].set(r.run)
	for _, v := range sh.R {
		set.RIn = append(set.RIn, strconv.FormatUint(v, 10))
	}
	for _, v := range sh.Z {
		set.ROut = append(set.ROut, strconv.FormatUint(v, 10))
	}
	return nil
}

// Write generates the packs c asks for and writes the directory.
func Write(ctx context.Context, c Config) (*Report, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	p := Params{Profile: "llama", Type: "gates", Bits: c.Bits, Relu: c.Relu, Ars: c.Ars, Shift: c.Shift, MaxPool: c.MaxPool}
	per := c.PacksPerRequest
	if per == 0 {
		per = msg.MaxGatePacks
	}
	reqs := requests(p, per)
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("llamagates: %w", err)
	}
	s := &sink{}
	for b, name := range []string{ServerDat, ClientDat} {
		// Packs and mask shares are secrets of their party: 0600.
		f, err := os.OpenFile(filepath.Join(c.Dir, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("llamagates: %w", err)
		}
		defer f.Close()
		s.dat[b] = f
		for i := range 3 {
			*s.masks[b].set(i) = MaskSet{RIn: []string{}, ROut: []string{}}
		}
	}
	rep := &Report{Dir: c.Dir, Packs: c.Relu + c.Ars + c.MaxPool, DatBytes: p.DatBytes()}
	var err error
	if c.Party0 == "" {
		rep.Source = "in-process module pair"
		err = fromLocalPair(ctx, p, reqs, s)
	} else {
		rep.Source = fmt.Sprintf("parties %s, %s", c.Party0, c.Party1)
		err = fromParties(ctx, p, reqs, [2]string{c.Party0, c.Party1}, c.AppTLS, s)
	}
	if err != nil {
		return nil, fmt.Errorf("llamagates: %w", err)
	}
	for b, name := range []string{ServerMasks, ClientMasks} {
		if err := s.dat[b].Sync(); err != nil {
			return nil, fmt.Errorf("llamagates: %w", err)
		}
		js, err := json.Marshal(&s.masks[b])
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(c.Dir, name), append(js, '\n'), 0o600); err != nil {
			return nil, fmt.Errorf("llamagates: %w", err)
		}
	}
	js, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.Dir, ParamsJSON), append(js, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("llamagates: %w", err)
	}
	return rep, nil
}

// fromLocalPair asks an in-process module pair, one request at a time.
func fromLocalPair(ctx context.Context, p Params, reqs []request, s *sink) error {
	lp, err := host.NewLocalPair(ctx, host.LocalOptions{})
	if err != nil {
		return err
	}
	defer lp.Close()
	for _, r := range reqs {
		sh, err := lp.Correlation(ctx, r.corr(p))
		if err != nil {
			return err
		}
		errs := [2]error{s.put(0, r, sh[0]), s.put(1, r, sh[1])}
		sh[0].Wipe()
		sh[1].Wipe()
		if err := errors.Join(errs[0], errs[1]); err != nil {
			return err
		}
	}
	return nil
}

// fromParties asks both party daemons over one request stream each,
// under ids drawn at random (fresh for every run), and writes each
// site's replies in request order.
func fromParties(ctx context.Context, p Params, reqs []request, addrs [2]string, tlsf *client.TLSFiles, s *sink) error {
	var idBase [8]byte
	if _, err := rand.Read(idBase[:]); err != nil {
		return err
	}
	base := binary.LittleEndian.Uint64(idBase[:]) >> 1
	krs := make([]*pb.KeyRequest, len(reqs))
	for i, r := range reqs {
		krs[i] = client.Correlation(base+uint64(i), r.corr(p))
	}
	return both.Run(ctx, func(ctx context.Context, b int) error {
		if err := site(ctx, addrs[b], b, tlsf, p, reqs, krs, func(r request, sh *msg.CorrShares) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.put(b, r, sh)
		}); err != nil {
			return fmt.Errorf("party %d (%s): %w", b, addrs[b], err)
		}
		return nil
	})
}

// site runs party b's stream: sends every request, then hands put
// each answer in order, checked to be for the request asked.
func site(ctx context.Context, addr string, b int, tlsf *client.TLSFiles, p Params, reqs []request, krs []*pb.KeyRequest, put func(request, *msg.CorrShares) error) error {
	cl, err := client.DialParty(addr, b, tlsf)
	if err != nil {
		return err
	}
	defer cl.Close()
	st, err := cl.Stream(ctx)
	if err != nil {
		return err
	}
	// At most window requests in flight: party 1 fails a request that
	// party 0 has not claimed within its match timeout, and a party
	// serves a stream's requests one batch at a time, so a long run sent
	// at once would leave its tail waiting past that timeout.
	const window = 3
	sent := 0
	send := func() error {
		if sent == len(krs) {
			return nil
		}
		sent++
		return st.Send(krs[sent-1])
	}
	for range window {
		if err := send(); err != nil {
			return err
		}
	}
	for i, r := range reqs {
		rep, err := st.Recv()
		if err != nil {
			return err
		}
		switch {
		case rep.Err != nil:
			return fmt.Errorf("request %d: %w", rep.ID, rep.Err)
		case rep.ID != krs[i].Id:
			return fmt.Errorf("a reply for request %d where %d was next", rep.ID, krs[i].Id)
		case len(rep.Shares) != 1 || rep.Shares[0].Corr == nil:
			return fmt.Errorf("request %d: answered without gate packs (does the party serve LLAMA gates?)", rep.ID)
		}
		sh := rep.Shares[0].Corr
		if want := r.corr(p); sh.Corr != want {
			sh.Wipe()
			return fmt.Errorf("request %d: answered for %+v, asked %+v", rep.ID, sh.Corr, want)
		}
		err = put(r, sh)
		sh.Wipe()
		if err != nil {
			return err
		}
		if err := send(); err != nil {
			return err
		}
	}
	return st.CloseSend()
}
