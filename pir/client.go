package pir

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/kord-fss/kord/fss"
)

// Client queries two PIR servers. It learns the database shape from
// GET /v1/info on both servers (which must agree) unless Expect is set, and
// sends the expected content hash with every request, so a database that
// changed between queries is an error (ErrDBChanged), not a wrong record.
type Client struct {
	servers [2]string
	hc      *http.Client
	info    *Info
	hash    [32]byte
}

// NewClient returns a client for servers a and b ("host:port" or a URL).
// hc nil means an HTTP/2-over-cleartext client.
func NewClient(a, b string, hc *http.Client) *Client {
	if hc == nil {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		hc = &http.Client{Transport: &http.Transport{Protocols: &p, MaxIdleConnsPerHost: 4}}
	}
	return &Client{servers: [2]string{baseURL(a), baseURL(b)}, hc: hc}
}

func baseURL(s string) string {
	if strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") {
		return strings.TrimSuffix(s, "/")
	}
	return "http://" + s
}

// Expect pins the database the client expects (e.g. a hash published by
// the database owner); queries fail with ErrDBChanged if a server differs.
func (c *Client) Expect(info Info) error {
	h, err := hex.DecodeString(info.Hash)
	if err != nil || len(h) != 32 {
		return fmt.Errorf("pir: expected hash %q is not 64 hex digits", info.Hash)
	}
	info.DomainBits = DomainBits(info.Count)
	info.KeyBytes = fss.XorKeySize(info.DomainBits)
	c.info = &info
	copy(c.hash[:], h)
	return nil
}

// Info fetches (once) the database description from both servers and checks
// that they agree.
func (c *Client) Info(ctx context.Context) (Info, error) {
	if c.info != nil {
		return *c.info, nil
	}
	var infos [2]Info
	for i, s := range c.servers {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s+"/v1/info", nil)
		if err != nil {
			return Info{}, err
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			return Info{}, fmt.Errorf("pir: server %d (%s): %w", i, s, err)
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&infos[i])
		resp.Body.Close()
		if err != nil {
			return Info{}, fmt.Errorf("pir: server %d (%s): bad info: %w", i, s, err)
		}
	}
	if infos[0] != infos[1] {
		return Info{}, fmt.Errorf("%w: %+v vs %+v", ErrServersDisagree, infos[0], infos[1])
	}
	if err := c.Expect(infos[0]); err != nil {
		return Info{}, err
	}
	return *c.info, nil
}

// Query retrieves record i.
func (c *Client) Query(ctx context.Context, i int) ([]byte, error) {
	r, err := c.QueryBatch(ctx, []int{i})
	if err != nil {
		return nil, err
	}
	return r[0], nil
}

// QueryBatch retrieves several records with one request to each server.
func (c *Client) QueryBatch(ctx context.Context, idx []int) ([][]byte, error) {
	info, err := c.Info(ctx)
	if err != nil {
		return nil, err
	}
	if len(idx) == 0 || len(idx) > MaxKeysPerRequest {
		return nil, fmt.Errorf("%w: %d indices (1..%d)", ErrTooManyKeys, len(idx), MaxKeysPerRequest)
	}
	reqs := [2]*Request{
		{Hash: c.hash, RecordSize: info.RecordSize, Count: info.Count, Keys: make([]*fss.XorKey, len(idx))},
		{Hash: c.hash, RecordSize: info.RecordSize, Count: info.Count, Keys: make([]*fss.XorKey, len(idx))},
	}
	for j, x := range idx {
		if x < 0 || x >= info.Count {
			return nil, fmt.Errorf("%w: %d is not in [0, %d)", ErrIndexRange, x, info.Count)
		}
		k0, k1, err := fss.GenXor(nil, info.DomainBits, uint64(x), 1)
		if err != nil {
			return nil, err
		}
		reqs[0].Keys[j], reqs[1].Keys[j] = k0, k1
	}
	var resps [2]*Response
	var errs [2]error
	done := make(chan int, 2)
	for s := range 2 {
		go func() {
			resps[s], errs[s] = c.post(ctx, s, reqs[s])
			done <- s
		}()
	}
	<-done
	<-done
	for _, r := range reqs {
		for _, k := range r.Keys {
			k.Wipe()
		}
	}
	for s := range 2 {
		if errs[s] != nil {
			return nil, fmt.Errorf("pir: server %d (%s): %w", s, c.servers[s], errs[s])
		}
		if resps[s].Hash != c.hash {
			return nil, fmt.Errorf("pir: server %d: %w", s, ErrDBChanged)
		}
		if resps[s].RecordSize != info.RecordSize || len(resps[s].Answers) != len(idx) {
			return nil, fmt.Errorf("pir: server %d: %w: %d answers of %d bytes", s, ErrRecordSizeMismatch, len(resps[s].Answers), resps[s].RecordSize)
		}
	}
	out := make([][]byte, len(idx))
	for j := range out {
		a := bytes.Clone(resps[0].Answers[j])
		xorInto(a, resps[1].Answers[j])
		out[j] = a
	}
	return out, nil
}

func (c *Client) post(ctx context.Context, s int, r *Request) (*Response, error) {
	body, err := r.MarshalBinary()
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.servers[s]+"/v1/answer", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-kord-pir")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, respHeader+MaxKeysPerRequest*MaxRecordSize+1))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var eb errorBody
		if json.Unmarshal(data, &eb) != nil {
			return nil, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, data)
		}
		return nil, fmt.Errorf("%w (%s)", codeErr(eb.Code), eb.Error)
	}
	return ParseResponse(data)
}

// codeErr maps a server error code to the package's sentinel error.
func codeErr(code string) error {
	switch code {
	case codeDBChanged:
		return ErrDBChanged
	case codeRecordSize:
		return ErrRecordSizeMismatch
	case codeCount:
		return ErrCountMismatch
	case codeKeyWidth:
		return ErrKeyWidth
	case codeTooMany:
		return ErrTooManyKeys
	case codeBadRequest:
		return ErrMessage
	case codeStopping:
		return ErrStopping
	}
	return fmt.Errorf("pir: server error %q", code)
}
