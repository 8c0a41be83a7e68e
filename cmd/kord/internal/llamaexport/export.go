// Package llamaexport writes dealerless EzPC LLAMA DCF keys as the files a
// LLAMA program reads its dealer's output from (`kord llama export`), and
// reads them back.
//
// An export directory holds, for N derived-mode DCF keys of one shape
// (α drawn inside the two modules, a public payload β of G elements:
// LLAMA's groupSize, 1 unless a payload vector is asked for):
//
//	server.dat     party 0's N keys, LLAMA's layout, concatenated in request order
//	client.dat     party 1's N keys, likewise
//	server.shares  party 0's additive share of each α mod 2^Bin, one decimal per line
//	client.shares  party 1's, likewise
//	params.json    {"profile":"llama","type":"dcf","in_bits":L,"out_bits":M,"group":G,"keys":N}
//
// The keys come from two party daemons (their application addresses), or
// from an in-process module pair (host.LocalPair) when none are given:
// either way no process ever holds both key shares of a pair or an α.
// Reading back is strict: a .dat file whose length is not exactly N keys
// of the shape in params.json, a share file with the wrong number of lines
// or a share wider than Bin is an error that names the file and the
// numbers.
package llamaexport

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/fss/llama"
	"github.com/kord-fss/kord/host"
	"github.com/kord-fss/kord/internal/both"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// File names inside an export directory.
const (
	ServerDat    = "server.dat"
	ClientDat    = "client.dat"
	ServerShares = "server.shares"
	ClientShares = "client.shares"
	ParamsJSON   = "params.json"
)

// MaxKeys bounds one export (2^24 keys: about 10 GiB per .dat file for a
// 64-bit DCF).
const MaxKeys = 1 << 24

// perRequest is how many keys one derived request to a party asks for
// (the party's limit, service.MaxCount).
const perRequest = 4096

// ErrBadInput marks a configuration or file that is wrong; the message
// names what.
var ErrBadInput = errors.New("llamaexport: bad input")

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadInput, fmt.Sprintf(format, args...))
}

// Config is one export.
type Config struct {
	Dir             string
	Keys            int    // N, 1..MaxKeys
	InBits, OutBits int    // Bin, Bout: 1..64
	Beta            uint64 // the public payload, below 2^Bout (callers default it to 1)
	// Betas is a public payload vector of 2..msg.MaxGroup elements, each
	// below 2^Bout, in place of Beta (which must then be zero): the keys'
	// group G is len(Betas).
	Betas []uint64
	// Party0, Party1: the two party daemons' application addresses
	// (host:port or unix:///path). Both empty: an in-process module pair.
	Party0, Party1 string
	// AppTLS, when set, are the application's certificate files for the
	// parties' TLS application APIs (ServerName is filled in per party:
	// peertls.PartyName); nil: plaintext.
	AppTLS *client.TLSFiles
	// Force lets Export write into a directory that is not empty,
	// replacing the export files there.
	Force bool
}

// Validate reports what is wrong with c.
func (c Config) Validate() error {
	switch {
	case c.Dir == "":
		return bad("dir: no output directory given")
	case c.Keys < 1 || c.Keys > MaxKeys:
		return bad("keys: %d is outside 1..%d", c.Keys, MaxKeys)
	case c.InBits < 1 || c.InBits > 64:
		return bad("in-bits: %d is outside 1..64", c.InBits)
	case c.OutBits < 1 || c.OutBits > 64:
		return bad("out-bits: %d is outside 1..64", c.OutBits)
	case c.Beta&^prg.Mask(c.OutBits) != 0:
		return bad("beta: %d does not fit in %d output bits", c.Beta, c.OutBits)
	case (c.Party0 == "") != (c.Party1 == ""):
		return bad("party0/party1: give both party addresses, or neither for an in-process module pair")
	case len(c.Betas) == 1:
		return bad("beta: a one-element payload goes in Beta, not Betas")
	case len(c.Betas) > msg.MaxGroup:
		return bad("beta: %d payload elements, at most %d (msg.MaxGroup)", len(c.Betas), msg.MaxGroup)
	case len(c.Betas) > 1 && c.Beta != 0:
		return bad("beta: give one payload (Beta) or a vector (Betas), not both")
	}
	for j, v := range c.Betas {
		if v&^prg.Mask(c.OutBits) != 0 {
			return bad("beta element %d: %d does not fit in %d output bits", j, v, c.OutBits)
		}
	}
	if ks := (llama.Params{InBits: c.InBits, OutBits: c.OutBits, Group: c.group()}).KeySize(); ks > msg.MaxSlabBytes {
		return bad("beta: one key of %d bytes passes the bulk limit of %d", ks, msg.MaxSlabBytes)
	}
	return nil
}

// group is the export's payload group size G.
func (c Config) group() int { return max(len(c.Betas), 1) }

// Payload is the export's public payload: Betas, or Beta as one element.
func (c Config) Payload() []uint64 {
	if len(c.Betas) > 1 {
		return c.Betas
	}
	return []uint64{c.Beta}
}

// Params is params.json.
type Params struct {
	Profile string `json:"profile"`
	Type    string `json:"type"`
	InBits  int    `json:"in_bits"`
	OutBits int    `json:"out_bits"`
	Group   int    `json:"group"`
	Keys    int    `json:"keys"`
	// Beta is the public payload the keys were made for, Group elements
	// (absent from exports made before it was recorded).
	Beta []uint64 `json:"beta,omitempty"`
}

// Llama is the key shape p describes.
func (p Params) Llama() llama.Params {
	return llama.Params{InBits: p.InBits, OutBits: p.OutBits, Group: p.Group}
}

// check reports whether p describes a llama DCF export kord can read.
func (p Params) check() error {
	if p.Profile != "llama" || p.Type != "dcf" {
		return bad("%s: profile %q type %q, want llama dcf", ParamsJSON, p.Profile, p.Type)
	}
	if err := p.Llama().Validate(); err != nil {
		return bad("%s: %v", ParamsJSON, err)
	}
	if p.Keys < 1 || p.Keys > MaxKeys {
		return bad("%s: keys %d is outside 1..%d", ParamsJSON, p.Keys, MaxKeys)
	}
	if len(p.Beta) > 0 && len(p.Beta) != p.Group {
		return bad("%s: beta has %d elements, group is %d", ParamsJSON, len(p.Beta), p.Group)
	}
	for j, v := range p.Beta {
		if v&^prg.Mask(p.OutBits) != 0 {
			return bad("%s: beta element %d: %d does not fit in %d output bits", ParamsJSON, j, v, p.OutBits)
		}
	}
	return nil
}

// Report says what an export wrote.
type Report struct {
	Dir      string `json:"dir"`
	Source   string `json:"source"` // "in-process module pair" or "parties ADDR0, ADDR1"
	Keys     int    `json:"keys"`
	KeyBytes int    `json:"key_bytes"` // one key's size in LLAMA's layout
	DatBytes int64  `json:"dat_bytes"` // each .dat file's size
}

// sink is where generated keys go: one .dat and one .shares writer per
// party.
type sink struct {
	dat, shares [2]*bufio.Writer
	files       []*os.File
}

func create(dir string) (*sink, error) {
	s := &sink{}
	for b, names := range [2][2]string{{ServerDat, ServerShares}, {ClientDat, ClientShares}} {
		for i, name := range names {
			// Key shares and α shares are secrets of their party: 0600.
			f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
			if err != nil {
				s.close()
				return nil, fmt.Errorf("llamaexport: %w", err)
			}
			s.files = append(s.files, f)
			w := bufio.NewWriterSize(f, 1<<20)
			if i == 0 {
				s.dat[b] = w
			} else {
				s.shares[b] = w
			}
		}
	}
	return s, nil
}

// put writes party b's key and α share.
func (s *sink) put(b int, key []byte, alphaShare uint64) error {
	if _, err := s.dat[b].Write(key); err != nil {
		return err
	}
	var num [24]byte
	line := strconv.AppendUint(num[:0], alphaShare, 10)
	_, err := s.shares[b].Write(append(line, '\n'))
	return err
}

func (s *sink) flush() error {
	for b := range 2 {
		if err := s.dat[b].Flush(); err != nil {
			return err
		}
		if err := s.shares[b].Flush(); err != nil {
			return err
		}
	}
	for _, f := range s.files {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	return nil
}

func (s *sink) close() {
	for _, f := range s.files {
		f.Close()
	}
}

// Export generates c.Keys keys and writes the export directory.
func Export(ctx context.Context, c Config) (*Report, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if ents, err := os.ReadDir(c.Dir); err == nil && len(ents) > 0 && !c.Force {
		return nil, bad("dir: %s exists and is not empty: give another directory, or --force to overwrite the export there", c.Dir)
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("llamaexport: %w", err)
	}
	lp := llama.Params{InBits: c.InBits, OutBits: c.OutBits, Group: c.group()}
	s, err := create(c.Dir)
	if err != nil {
		return nil, err
	}
	defer s.close()
	rep := &Report{Dir: c.Dir, Keys: c.Keys, KeyBytes: lp.KeySize(), DatBytes: int64(c.Keys) * int64(lp.KeySize())}
	if c.Party0 == "" {
		rep.Source = "in-process module pair"
		err = fromLocalPair(ctx, c, s)
	} else {
		rep.Source = fmt.Sprintf("parties %s, %s", c.Party0, c.Party1)
		err = fromParties(ctx, c, s)
	}
	if err == nil {
		err = s.flush()
	}
	if err != nil {
		return nil, fmt.Errorf("llamaexport: %w", err)
	}
	p := Params{Profile: "llama", Type: "dcf", InBits: c.InBits, OutBits: c.OutBits, Group: c.group(), Keys: c.Keys, Beta: c.Payload()}
	js, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.Dir, ParamsJSON), append(js, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("llamaexport: %w", err)
	}
	return rep, nil
}

// fromLocalPair draws the keys from an in-process module pair, one bulk
// (slab) per msg.MaxBulk keys (fewer for a payload vector, whose bulk is
// bounded by msg.MaxSlabBytes).
func fromLocalPair(ctx context.Context, c Config, s *sink) error {
	pair, err := host.NewLocalPair(ctx, host.LocalOptions{})
	if err != nil {
		return err
	}
	defer pair.Close()
	g := c.group()
	per := min(msg.MaxBulk, msg.MaxSlabBytes/(llama.Params{InBits: c.InBits, OutBits: c.OutBits, Group: g}).KeySize())
	for done := 0; done < c.Keys; {
		n := min(c.Keys-done, per)
		b := &msg.Bulk{Mode: msg.Derived, Profile: msg.Llama, Type: fss.DCF, InBits: c.InBits, OutBits: c.OutBits, N: n, Beta: c.Beta}
		if g > 1 {
			b.Group, b.Beta, b.Betas = g, 0, c.Betas
		}
		slabs, err := pair.GenerateSlabs(ctx, 0, [2]*msg.Bulk{b, b})
		if err != nil {
			return err
		}
		for i := range n {
			for p := range 2 {
				if err := s.put(p, slabs[p].Key(i), slabs[p].AlphaShares[i]); err != nil {
					pair.Release(slabs)
					return err
				}
			}
		}
		pair.Release(slabs)
		done += n
	}
	return nil
}

// fromParties asks both party daemons for the keys over one request
// stream each, derived requests of up to perRequest keys under ids drawn
// at random (fresh for every export), and writes each site's replies in
// request order.
func fromParties(ctx context.Context, c Config, s *sink) error {
	var idBase [8]byte
	if _, err := rand.Read(idBase[:]); err != nil {
		return err
	}
	base := binary.LittleEndian.Uint64(idBase[:]) >> 1 // room for the request count
	p := fss.Params{Type: fss.DCF, InBits: c.InBits, OutBits: c.OutBits}
	g := c.group()
	ks := msg.LlamaParamsG(p, g).KeySize()
	// A party serves a payload vector's request as one bulk of at most
	// msg.MaxSlabBytes of keys.
	per := min(perRequest, msg.MaxSlabBytes/ks)
	var reqs []*pb.KeyRequest
	for done, id := 0, base; done < c.Keys; id++ {
		n := min(c.Keys-done, per)
		if g > 1 {
			reqs = append(reqs, client.DerivedVector(id, p, n, c.Betas))
		} else {
			reqs = append(reqs, client.WithProfile(client.Derived(id, p, n, c.Beta, false), msg.Llama))
		}
		done += n
	}
	var mu sync.Mutex // the sink's writers, written from both sites' goroutines
	addrs := [2]string{c.Party0, c.Party1}
	return both.Run(ctx, func(ctx context.Context, b int) error {
		if err := site(ctx, addrs[b], b, c.AppTLS, reqs, ks, func(key []byte, alphaShare uint64) error {
			mu.Lock()
			defer mu.Unlock()
			return s.put(b, key, alphaShare)
		}); err != nil {
			return fmt.Errorf("party %d (%s): %w", b, addrs[b], err)
		}
		return nil
	})
}

// site runs party b's stream: sends every request, then hands put each
// key of the replies, in order; every key must be keySize bytes.
func site(ctx context.Context, addr string, b int, tlsf *client.TLSFiles, reqs []*pb.KeyRequest, keySize int, put func(key []byte, alphaShare uint64) error) error {
	cl, err := client.DialParty(addr, b, tlsf)
	if err != nil {
		return err
	}
	defer cl.Close()
	st, err := cl.Stream(ctx)
	if err != nil {
		return err
	}
	const perMessage = 64
	sendErr := make(chan error, 1)
	go func() {
		for lo := 0; lo < len(reqs); lo += perMessage {
			if err := st.SendBatch(reqs[lo:min(len(reqs), lo+perMessage)]); err != nil {
				sendErr <- err
				return
			}
		}
		sendErr <- nil
	}()
	for _, r := range reqs {
		rep, err := st.Recv()
		if err != nil {
			return err
		}
		switch {
		case rep.Err != nil:
			return fmt.Errorf("request %d: %w", rep.ID, rep.Err)
		case rep.ID != r.Id:
			return fmt.Errorf("a reply for request %d where %d was next", rep.ID, r.Id)
		case len(rep.Shares) != int(r.Count):
			return fmt.Errorf("request %d: %d keys, asked for %d", rep.ID, len(rep.Shares), r.Count)
		}
		for _, sh := range rep.Shares {
			if len(sh.Raw) != keySize {
				clear(sh.Raw)
				// A party that predates the llama profile ignores the
				// field and answers with kord-v1 keys.
				return fmt.Errorf("request %d: a %d-byte key where a llama key is %d bytes (does the party serve the llama profile?)", rep.ID, len(sh.Raw), keySize)
			}
			err := put(sh.Raw, sh.AlphaShare)
			clear(sh.Raw)
			if err != nil {
				return err
			}
		}
	}
	st.CloseSend()
	return <-sendErr
}

// Files is an export directory read back.
type Files struct {
	Params Params
	// Keys[b] is party b's .dat file, key i at Keys[b][i·KeySize:].
	Keys [2][]byte
	// AlphaShares[b][i] is party b's share of key i's α.
	AlphaShares [2][]uint64
}

// Key returns party b's key i.
func (e *Files) Key(b, i int) []byte {
	ks := e.Params.Llama().KeySize()
	return e.Keys[b][i*ks : (i+1)*ks : (i+1)*ks]
}

// Alpha returns key i's α, the sum of the two shares mod 2^Bin.
func (e *Files) Alpha(i int) uint64 {
	return (e.AlphaShares[0][i] + e.AlphaShares[1][i]) & prg.Mask(e.Params.InBits)
}

// Read reads an export directory back, checking every size against
// params.json.
func Read(dir string) (*Files, error) {
	js, err := os.ReadFile(filepath.Join(dir, ParamsJSON))
	if err != nil {
		return nil, fmt.Errorf("llamaexport: %w", err)
	}
	var e Files
	if err := json.Unmarshal(js, &e.Params); err != nil {
		return nil, bad("%s: %v", ParamsJSON, err)
	}
	if err := e.Params.check(); err != nil {
		return nil, err
	}
	for b, names := range [2][2]string{{ServerDat, ServerShares}, {ClientDat, ClientShares}} {
		if e.Keys[b], err = ReadDat(filepath.Join(dir, names[0]), e.Params.Llama(), e.Params.Keys); err != nil {
			return nil, err
		}
		if e.AlphaShares[b], err = ReadShares(filepath.Join(dir, names[1]), e.Params.InBits, e.Params.Keys); err != nil {
			return nil, err
		}
	}
	return &e, nil
}

// ReadDat reads a LLAMA .dat file that must hold exactly n keys of shape
// p, each of which must parse (llama.Parse, strict).
func ReadDat(path string, p llama.Params, n int) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("llamaexport: %w", err)
	}
	ks := int64(p.KeySize())
	if want := int64(n) * ks; st.Size() != want {
		return nil, bad("%s is %d bytes, want %d: %d keys of %d bytes (%v)%s", path, st.Size(), want, n, ks, p, wholeKeys(st.Size(), ks))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("llamaexport: %w", err)
	}
	if int64(len(data)) != int64(n)*ks {
		return nil, bad("%s changed size while it was read", path)
	}
	for i := range n {
		if _, err := llama.Parse(p, data[int64(i)*ks:int64(i+1)*ks]); err != nil {
			return nil, bad("%s: key %d: %v", path, i, err)
		}
	}
	return data, nil
}

// wholeKeys explains a wrong size in whole keys when it is one.
func wholeKeys(size, ks int64) string {
	if size%ks == 0 {
		return fmt.Sprintf("; the file holds %d whole keys of that shape", size/ks)
	}
	return "; not a whole number of keys of that shape (another in_bits or out_bits?)"
}

// ReadShares reads a .shares file: exactly n lines, each a decimal share
// below 2^inBits.
func ReadShares(path string, inBits, n int) ([]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("llamaexport: %w", err)
	}
	defer f.Close()
	return parseShares(path, f, inBits, n)
}

func parseShares(name string, r io.Reader, inBits, n int) ([]uint64, error) {
	out := make([]uint64, 0, min(n, 1<<20))
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		v, err := strconv.ParseUint(t, 10, 64)
		if err != nil {
			return nil, bad("%s line %d: %q is not a decimal share", name, line, t)
		}
		if v&^prg.Mask(inBits) != 0 {
			return nil, bad("%s line %d: %d does not fit in %d input bits", name, line, v, inBits)
		}
		if len(out) == n {
			return nil, bad("%s has more than the %d lines params.json gives", name, n)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("llamaexport: %s: %w", name, err)
	}
	if len(out) != n {
		return nil, bad("%s has %d lines, want %d (one per key)", name, len(out), n)
	}
	return out, nil
}

// Verify checks that every key pair of e (group 1) evaluates, with
// LLAMA's evaluation, to beta·[x < α] around its α (the shares' sum).
func (e *Files) Verify(beta uint64) error { return e.VerifyVec([]uint64{beta}) }

// VerifyVec is Verify for a payload of params.json's group G elements:
// every pair evaluates to beta_j·[x < α] for each element j.
func (e *Files) VerifyVec(beta []uint64) error {
	p := e.Params.Llama()
	if len(beta) != p.Group {
		return bad("beta: %d payload elements, the export's group is %d", len(beta), p.Group)
	}
	for j, v := range beta {
		if v&^prg.Mask(p.OutBits) != 0 {
			return bad("beta element %d: %d does not fit in the export's %d output bits", j, v, p.OutBits)
		}
	}
	for i := range e.Params.Keys {
		if err := llama.CheckPair(p, e.Key(0, i), e.Key(1, i), e.Alpha(i), beta); err != nil {
			return fmt.Errorf("key %d: %w: %s", i, err, e.likelyCause(beta))
		}
	}
	return nil
}

// likelyCause says, for a pair that does not evaluate to beta·[x < α],
// what most likely differs: the payload asked for, or the files.
func (e *Files) likelyCause(beta []uint64) string {
	if len(e.Params.Beta) > 0 && !slices.Equal(e.Params.Beta, beta) {
		return fmt.Sprintf("the keys were made for β = %v (params.json), not %v", e.Params.Beta, beta)
	}
	if len(e.Params.Beta) == 0 {
		return fmt.Sprintf("either β is not %v (params.json does not record it: give the --beta the export was made with) or the .dat and .shares files do not belong together", beta)
	}
	return "the .dat and .shares files do not belong together (from different exports, or altered)"
}
