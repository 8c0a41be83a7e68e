package socket

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/modulepb"
)

// ErrTransport wraps failures of the socket itself (the module daemon is
// down or restarting); a call that failed this way may or may not have run.
var ErrTransport = errors.New("socket: module unreachable")

// RemoteError is an error the module returned for one call.
type RemoteError struct {
	Class uint32
	Msg   string
}

func (e *RemoteError) Error() string { return e.Msg }

// Is maps the class onto the module's errors.
func (e *RemoteError) Is(target error) bool {
	switch e.Class {
	case ClassBadRequest:
		return target == module.ErrBadRequest
	case ClassNotPaired:
		return target == module.ErrNotPaired
	case ClassLocked:
		return target == module.ErrLocked
	case ClassWitness:
		return target == module.ErrWitness
	case ClassRefused:
		return target == ErrRefused
	}
	return false
}

// Call is one operation in a batched request; set exactly one field.
type Call struct {
	Submit  *msg.SubmitRequest
	Collect *msg.CollectRequest
	Poll    bool
	// Frames submits the peer's frames in order (SubmitPeerFrame each)
	// and stops at the first the module refuses.
	Frames *Frames
	// Range collects a run of counters.
	Range *CollectRange
}

// Result is the answer to one Call.
type Result struct {
	Submit *msg.SubmitResponse
	// Packed holds the frames of a Submit packed into one buffer
	// (Submit.Frames are slices of it).
	Packed  Frames
	Collect *msg.CollectResponse
	Poll    *msg.PollResponse
	Locked  bool
	Frames  *FramesResult
	Range   []msg.CollectResponse
	Err     error
	// Buf (a Client's collecting Do): the response buffer Collect's slab
	// keys and Range's outputs are slices of, shared by every result of
	// the Do, which together hold one reference (see RecvBuf); nil
	// otherwise.
	Buf *RecvBuf
}

// Client is a module.Device and module.Syncer over the module daemon's
// socket. It is safe for concurrent use (a small pool of connections) and
// redials after the daemon restarts.
type Client struct {
	path    string
	timeout time.Duration
	mu      sync.Mutex
	idle    []*conn
	closed  bool
	// fds: ask for slabs as sealed memfds (UseSlabFDs; off again after a
	// memfd failed: slabFDsFailed).
	fds atomic.Bool
}

var (
	_ module.Device = (*Client)(nil)
	_ module.Syncer = (*Client)(nil)
)

// Dial returns a client for the socket at path; it connects lazily.
// timeout bounds each request without its own deadline (0 = 30s).
func Dial(path string, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return &Client{path: path, timeout: timeout}
}

// Close closes idle connections.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, cn := range c.idle {
		cn.Close()
	}
	c.idle = nil
	return nil
}

// conn is a connection with its reusable buffers.
type conn struct {
	net.Conn
	wbuf, rbuf []byte
}

func (c *Client) get(ctx context.Context) (*conn, error) {
	c.mu.Lock()
	if n := len(c.idle); n > 0 {
		cn := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return cn, nil
	}
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%w: client closed", ErrTransport)
	}
	var d net.Dialer
	cn, err := d.DialContext(ctx, "unix", c.path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTransport, err)
	}
	bigSendBuffer(cn)
	return &conn{Conn: cn}, nil
}

// sendBuffer is the socket send buffer asked for: a batch's slab (a few
// hundred KiB to a few MiB) fits in it, so the module writes a response
// in one go instead of waking the reader for every ~200 KiB (the Linux
// default) and waiting for it to drain, a context switch each on a
// machine with few cores. The kernel caps it at net.core.wmem_max.
const sendBuffer = 4 << 20

// bigSendBuffer sets c's send buffer to sendBuffer where it can.
func bigSendBuffer(c net.Conn) {
	if b, ok := c.(interface{ SetWriteBuffer(int) error }); ok {
		_ = b.SetWriteBuffer(sendBuffer)
	}
}

func (c *Client) put(cn *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || len(c.idle) >= 8 {
		cn.Close()
		return
	}
	c.idle = append(c.idle, cn)
}

// roundTrip sends one request and reads its response. With keep (a
// request that collects), the response is read into a buffer of its own
// that the collected outputs are slices of, instead of into the
// connection's buffer and copied out of it.
func (c *Client) roundTrip(ctx context.Context, req *pb.ModuleRequest, keep bool) (*pb.ModuleResponse, *RecvBuf, error) {
	cn, err := c.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	// The request may carry this party's shares: the buffer is wiped
	// once written.
	cn.wbuf, err = appendMsg(cn.wbuf[:0], req)
	if err != nil {
		c.put(cn)
		return nil, nil, err
	}
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(c.timeout)
	}
	cn.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { cn.SetDeadline(time.Unix(1, 0)) })
	_, err = cn.Write(cn.wbuf)
	clear(cn.wbuf)
	var out []byte
	var rb *RecvBuf
	var fds []int
	if err == nil && keep && req.SlabFds {
		if rb, fds, err = readMsgFDs(cn.Conn); err == nil {
			out = rb.b
		}
	} else if err == nil && keep {
		// A pooled buffer, wiped when its last holder releases it.
		if rb, err = readMsgPooled(cn); err == nil {
			out = rb.b
		}
	} else if err == nil {
		cn.rbuf, err = readMsgInto(cn, cn.rbuf)
		out = cn.rbuf
	}
	if !stop() || err != nil {
		cn.Close()
		closeFDs(fds)
		rb.Release() // wiped
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, fmt.Errorf("%w: %v", ErrTransport, err)
	}
	var resp *pb.ModuleResponse
	if keep {
		resp, err = decodeResponse(out)
	} else {
		resp = &pb.ModuleResponse{}
		err = proto.Unmarshal(out, resp) // copies what it keeps
		clear(out)
	}
	c.put(cn)
	if err != nil {
		closeFDs(fds)
		clear(out)
		rb.Release()
		return nil, nil, fmt.Errorf("%w: malformed response: %v", ErrTransport, err)
	}
	if req.SlabFds {
		if err := mapSlabFDs(resp, fds, rb); err != nil {
			c.slabFDsFailed(err)
			wipeResults(resp)
			rb.Release() // unmaps
			return nil, nil, err
		}
	}
	if len(resp.Results) != len(req.Calls) {
		wipeResults(resp) // not used
		rb.Release()
		if len(resp.Results) == 1 && resp.Results[0].ErrorClass != ClassOK {
			return nil, nil, &RemoteError{Class: resp.Results[0].ErrorClass, Msg: resp.Results[0].Error}
		}
		return nil, nil, fmt.Errorf("%w: %d results for %d calls", ErrTransport, len(resp.Results), len(req.Calls))
	}
	return resp, rb, nil
}

// wipeShares clears the packed shares of a sent request.
func wipeShares(req *pb.ModuleRequest) {
	for _, c := range req.Calls {
		if s := c.GetSubmit(); s != nil {
			clear(s.PackedShares)
		}
	}
}

func remote(r *pb.Result) error {
	if r.ErrorClass == ClassOK {
		return nil
	}
	return &RemoteError{Class: r.ErrorClass, Msg: r.Error}
}

// Do runs calls in order in one round trip. The error is a transport
// error; per-call errors are in the results. With stopOnError the module
// skips the calls after the first failure.
func (c *Client) Do(ctx context.Context, calls []Call, stopOnError bool) ([]Result, error) {
	return c.do(ctx, calls, stopOnError, false, c.SlabFDs())
}

// DoBytes is Do with every slab's keys asked for as bytes on the socket,
// even where the client takes slabs as memfds (UseSlabFDs): for slabs
// whose keys the caller will copy anyway, which costs less from the
// socket than from a fresh mapping.
func (c *Client) DoBytes(ctx context.Context, calls []Call, stopOnError bool) ([]Result, error) {
	return c.do(ctx, calls, stopOnError, false, false)
}

// DoMapped is Do where a slab's keys may be a read-only mapping of the
// module's sealed memfd (Linux), read in place: they stay valid until
// the results' Buf is released for the last time, and cannot be written
// (wipe them with WipeKeys, which leaves a mapping alone).
func (c *Client) DoMapped(ctx context.Context, calls []Call, stopOnError bool) ([]Result, error) {
	return c.do(ctx, calls, stopOnError, true, c.SlabFDs())
}

func (c *Client) do(ctx context.Context, calls []Call, stopOnError, mapped, fds bool) ([]Result, error) {
	req := &pb.ModuleRequest{Calls: make([]*pb.Call, len(calls)), StopOnError: stopOnError}
	keep := false
	for i, cl := range calls {
		switch {
		case cl.Submit != nil:
			req.Calls[i] = &pb.Call{Op: &pb.Call_Submit{Submit: submitReqToPB(cl.Submit)}}
		case cl.Collect != nil:
			req.Calls[i] = &pb.Call{Op: &pb.Call_Collect{Collect: collectReqToPB(cl.Collect)}}
			// A slab's keys stay slices of the response buffer (no copy).
			keep = keep || cl.Collect.Count > 0
			req.SlabFds = req.SlabFds || fds && isSlabCollect(&calls[i])
		case cl.Poll:
			req.Calls[i] = &pb.Call{Op: &pb.Call_Poll{Poll: &pb.PollRequest{}}}
		case cl.Frames != nil:
			req.Calls[i] = &pb.Call{Op: &pb.Call_PeerFrames{PeerFrames: &pb.PeerFramesRequest{Data: cl.Frames.Data, Lens: cl.Frames.Lens}}}
		case cl.Range != nil:
			if err := checkRange(cl.Range); err != nil {
				return nil, fmt.Errorf("Call %d: %w", i, err)
			}
			req.Calls[i] = &pb.Call{Op: &pb.Call_CollectRange{CollectRange: rangeToPB(cl.Range)}}
			keep = true
		default:
			return nil, fmt.Errorf("%w: Call %d sets no operation", module.ErrBadRequest, i)
		}
	}
	resp, rb, err := c.roundTrip(ctx, req, keep)
	wipeShares(req)
	if err != nil {
		return nil, err
	}
	out := make([]Result, len(calls))
	for i, r := range resp.Results {
		out[i].Buf = rb
		out[i].Err = remote(r)
		if out[i].Err != nil {
			continue
		}
		switch v := r.Op.(type) {
		case *pb.Result_Submit:
			out[i].Submit, out[i].Packed, out[i].Err = submitRespFromPB(v.Submit)
		case *pb.Result_Collect:
			out[i].Collect, out[i].Err = collectRespFromPB(v.Collect)
		case *pb.Result_Poll:
			out[i].Poll, out[i].Locked = PollFromPB(v.Poll), v.Poll.GetLocked()
		case *pb.Result_PeerFrames:
			out[i].Frames = &FramesResult{Accepted: int(v.PeerFrames.GetAccepted()), Reject: v.PeerFrames.GetReject()}
		case *pb.Result_CollectRange:
			if calls[i].Range == nil {
				out[i].Err = fmt.Errorf("%w: result %d of the wrong kind", ErrTransport, i)
				continue
			}
			out[i].Range, out[i].Err = rangeRespFromPB(v.CollectRange, calls[i].Range.First, calls[i].Range.Count)
		default:
			out[i].Err = fmt.Errorf("%w: result %d of the wrong kind", ErrTransport, i)
		}
	}
	if !mapped {
		unmapCopies(out, rb)
	}
	return out, nil
}

func (c *Client) one(ctx context.Context, call *pb.Call) (*pb.Result, error) {
	resp, _, err := c.roundTrip(ctx, &pb.ModuleRequest{Calls: []*pb.Call{call}}, false)
	if err != nil {
		return nil, err
	}
	r := resp.Results[0]
	return r, remote(r)
}

// Provision runs one pairing step.
func (c *Client) Provision(ctx context.Context, req *msg.ProvisionRequest) (*msg.ProvisionResponse, error) {
	r, err := c.one(ctx, &pb.Call{Op: &pb.Call_Provision{Provision: &pb.ProvisionRequest{Message: req.Message}}})
	if err != nil {
		return nil, err
	}
	p := r.GetProvision()
	return &msg.ProvisionResponse{Message: p.GetMessage(), Paired: p.GetPaired()}, nil
}

// Submit sends shares, a peer frame or an abandon.
func (c *Client) Submit(ctx context.Context, req *msg.SubmitRequest) (*msg.SubmitResponse, error) {
	call := &pb.Call{Op: &pb.Call_Submit{Submit: submitReqToPB(req)}}
	r, err := c.one(ctx, call)
	clear(call.GetSubmit().PackedShares)
	if err != nil {
		return nil, err
	}
	resp, _, err := submitRespFromPB(r.GetSubmit())
	return resp, err
}

// Poll reports status.
func (c *Client) Poll(ctx context.Context, _ *msg.PollRequest) (*msg.PollResponse, error) {
	p, _, err := c.PollLocked(ctx)
	return p, err
}

// PollLocked reports status and whether the module waits for a witness.
func (c *Client) PollLocked(ctx context.Context) (*msg.PollResponse, bool, error) {
	r, err := c.one(ctx, &pb.Call{Op: &pb.Call_Poll{Poll: &pb.PollRequest{}}})
	if err != nil {
		return nil, false, err
	}
	return PollFromPB(r.GetPoll()), r.GetPoll().GetLocked(), nil
}

// collectReqToPB converts a collect (a range collect when Count > 0).
func collectReqToPB(r *msg.CollectRequest) *pb.CollectRequest {
	n := uint32(min(r.Count, 2*msg.MaxBulk+1))
	if r.Count < 0 {
		n = 2*msg.MaxBulk + 1 // refused by the module, naming Count
	}
	at := uint32(min(r.ExpectAt, 2*msg.MaxBulk+1))
	if r.ExpectAt < 0 {
		at = 2*msg.MaxBulk + 1 // out of every bulk: refused
	}
	return &pb.CollectRequest{Counter: r.Counter, Points: r.Points, Count: n, Corr: r.Corr, Expect: bulkToPB(r.Expect),
		ExpectAt: at}
}

// Collect returns the output at a counter, or with Count > 0 the slab of
// the bulk at that counter (one contiguous bytes field of keys at a fixed
// stride, checked). It retries once over a fresh connection after a
// transport failure: the module answers a repeated Collect with the same
// bytes. A correlation (req.Corr) is handed out once, so it is not
// retried.
func (c *Client) Collect(ctx context.Context, req *msg.CollectRequest) (*msg.CollectResponse, error) {
	call := &pb.Call{Op: &pb.Call_Collect{Collect: collectReqToPB(req)}}
	r, err := c.one(ctx, call)
	if errors.Is(err, ErrTransport) && !req.Corr {
		r, err = c.one(ctx, call)
	}
	if err != nil {
		return nil, err
	}
	return collectRespFromPB(r.GetCollect())
}

func (c *Client) sync(ctx context.Context, op pb.SyncRequest_Op, data []byte) (*pb.SyncResponse, error) {
	r, err := c.one(ctx, &pb.Call{Op: &pb.Call_Sync{Sync: &pb.SyncRequest{Op: op, Data: data}}})
	if err != nil {
		return nil, err
	}
	return r.GetSync(), nil
}

// Challenge draws the module's witness challenge.
func (c *Client) Challenge(ctx context.Context) ([]byte, error) {
	r, err := c.sync(ctx, pb.SyncRequest_OP_CHALLENGE, nil)
	if err != nil {
		return nil, err
	}
	return r.GetData(), nil
}

// Witness returns the module's witness over the peer's challenge.
func (c *Client) Witness(ctx context.Context, peerChallenge []byte) ([]byte, error) {
	r, err := c.sync(ctx, pb.SyncRequest_OP_WITNESS, peerChallenge)
	if err != nil {
		return nil, err
	}
	return r.GetData(), nil
}

// Reconcile hands the module the peer's witness.
func (c *Client) Reconcile(ctx context.Context, w []byte) (*module.Reconciled, error) {
	r, err := c.sync(ctx, pb.SyncRequest_OP_RECONCILE, w)
	if err != nil {
		return nil, err
	}
	return &module.Reconciled{RolledBack: r.GetRolledBack(), From: r.GetAdvancedFrom(), Next: r.GetNextCounter(), Dropped: int(r.GetDropped())}, nil
}
