package socket

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/modulepb"
)

// MaxCalls bounds the calls in one request.
const MaxCalls = 1 << 16

// Error classes on the wire.
const (
	ClassOK         = 0
	ClassBadRequest = 1
	ClassNotPaired  = 2
	ClassLocked     = 3
	ClassInternal   = 4
	ClassWitness    = 5
)

// Server serves one module on a Unix socket.
type Server struct {
	dev     module.Device
	log     *slog.Logger
	mu      sync.Mutex // journal
	journal io.Writer
	conns   sync.WaitGroup
	access  Access
	open    openConns
	// memfds makes the sealed memfds of slabs handed out as one.
	memfds module.SlabFDs
}

// ServerOptions configure a Server.
type ServerOptions struct {
	Logger *slog.Logger
	// Journal, if set, receives one line "<counter>" for every keystream
	// position (own counter of a bound or consume request) before the frame
	// that uses it leaves the module: the fault tests check that none
	// repeats.
	Journal io.Writer
	// Access decides which peers may connect (peercred.go). The zero
	// value refuses every peer.
	Access Access
}

// NewServer returns a server for dev.
func NewServer(dev module.Device, o ServerOptions) *Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{dev: dev, log: o.Logger, journal: o.Journal, access: o.Access, memfds: memfds{}}
	s.open.init()
	return s
}

// Listen listens on a Unix socket at path with mode 0600, removing a
// stale socket file first.
func Listen(path string) (net.Listener, error) { return listen(path, -1) }

// ListenGroup listens on a Unix socket at path with mode 0660 and group
// gid, so that a host running under another user in that group can
// connect (the server's Access then decides which uids may). The socket
// is created 0600 and given its group before it is opened to the group.
func ListenGroup(path string, gid int) (net.Listener, error) {
	if gid < 0 {
		return nil, fmt.Errorf("socket: group id %d", gid)
	}
	return listen(path, gid)
}

func listen(path string, gid int) (net.Listener, error) {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("socket: %s exists and is not a socket", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("socket: %s is in use by a running module", path)
		}
		os.Remove(path)
	}
	var l net.Listener
	var err error
	withUmask(0o177, func() { l, err = net.Listen("unix", path) })
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("socket: %w", err)
	}
	if gid >= 0 {
		if err := os.Chown(path, -1, gid); err != nil {
			l.Close()
			return nil, fmt.Errorf("socket: giving %s group %d: %w (the module's user must be a member of the group)", path, gid, err)
		}
		if err := os.Chmod(path, 0o660); err != nil {
			l.Close()
			return nil, fmt.Errorf("socket: %w", err)
		}
	}
	return l, nil
}

// Serve accepts connections until l is closed. Then it ends the open
// connections (drain.go): each finishes the request it is running, and
// its reply is written, but reads no other; Serve returns once all are
// closed, within DrainTimeout.
func (s *Server) Serve(l net.Listener) error {
	defer s.conns.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			s.open.drain()
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		s.conns.Add(1)
		go func() {
			defer s.conns.Done()
			if !s.admit(c) {
				return
			}
			s.serveConn(c)
		}()
	}
}

func (s *Server) serveConn(c net.Conn) {
	defer c.Close()
	if !s.open.add(c) {
		return // the server is draining
	}
	defer s.open.remove(c)
	bigSendBuffer(c)
	ctx := s.open.ctx
	var rbuf, wbuf []byte
	for {
		var err error
		rbuf, err = readMsgInto(c, rbuf)
		if err != nil {
			if !errors.Is(err, io.EOF) && !s.open.draining() {
				s.log.Warn("socket: dropping connection", "err", err)
			}
			return
		}
		var out net.Buffers
		var release func()
		var fd int
		wbuf, out, release, fd, err = s.handleParts(ctx, rbuf, wbuf[:0])
		clear(rbuf) // own shares
		if err != nil {
			clear(wbuf)
			release()
			s.log.Error("socket: encoding response", "err", err)
			return
		}
		// One writev: a slab's keys go from the module's memory to the
		// socket, not through wbuf (handleParts). Or, a slab's memfd
		// passed with the response (slabFDParts).
		if fd >= 0 {
			err = writeWithFD(c, out[0], fd)
			closeFD(fd)
		} else if len(out) == 1 {
			_, err = c.Write(out[0])
		} else {
			_, err = out.WriteTo(c)
		}
		release()   // the module's slab: wiped by the module, not here
		clear(wbuf) // own key shares
		if err != nil {
			return
		}
	}
}

// handleParts is handleAppend with the response as parts to write in
// order (their concatenation is handleAppend's message): all of them in
// buf but, for a slab from a module that pins it (slabPinner), the slab's
// keys, which stay in the module's memory until release. Call release
// (never nil) once the parts are written or dropped.
//
// fd (-1: none) is a slab's memfd to pass with the first byte of the
// response, for a request that asks for slab fds (slabFDParts); the
// caller closes it once written.
func (s *Server) handleParts(ctx context.Context, b, dst []byte) (buf []byte, out net.Buffers, release func(), fd int, err error) {
	req, bad := parseRequest(b)
	if bad == nil {
		if c := req.Calls[len(req.Calls)-1].GetCollect(); c.GetCount() > 0 && len(c.GetPoints()) == 0 {
			if fc, ok := s.dev.(slabFDCollector); ok && req.SlabFds && SlabFDSupported && !c.GetCorr() {
				buf, out, fd, err = s.slabFDParts(ctx, req, fc, c, dst)
				return buf, out, func() {}, fd, err
			}
			if sp, ok := s.dev.(slabPinner); ok {
				buf, out, release, err = s.slabParts(ctx, req, sp, c, dst)
				return buf, out, release, -1, err
			}
		}
	}
	buf, o, err := s.appendParsed(ctx, req, bad, dst)
	return buf, net.Buffers{o}, func() {}, -1, err
}

// Handle decodes one request and runs its calls. Malformed input yields a
// single bad-request result; it never panics and moves nothing.
func (s *Server) Handle(ctx context.Context, b []byte) *pb.ModuleResponse {
	req, bad := parseRequest(b)
	if bad != nil {
		return bad
	}
	return s.handle(ctx, req, req.Calls)
}

func parseRequest(b []byte) (*pb.ModuleRequest, *pb.ModuleResponse) {
	var req pb.ModuleRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		return nil, &pb.ModuleResponse{Results: []*pb.Result{{ErrorClass: ClassBadRequest, Error: "socket: malformed request: " + err.Error()}}}
	}
	if len(req.Calls) == 0 || len(req.Calls) > MaxCalls {
		return nil, &pb.ModuleResponse{Results: []*pb.Result{{ErrorClass: ClassBadRequest, Error: fmt.Sprintf("socket: %d calls, want 1..%d", len(req.Calls), MaxCalls)}}}
	}
	return &req, nil
}

// handleAppend is Handle with the response encoded, length prefix and all,
// into dst: buf is dst grown, out the message within it. A request that
// ends with a collect range (a batch's last call) has that result
// encoded as it is collected — each key copied once, from the module's
// collect cache into buf, with no CollectRangeResponse built and
// marshalled — in the bytes proto.Marshal would write.
func (s *Server) handleAppend(ctx context.Context, b, dst []byte) (buf, out []byte, err error) {
	req, bad := parseRequest(b)
	return s.appendParsed(ctx, req, bad, dst)
}

// appendParsed is handleAppend for a parsed request (parseRequest's
// results).
func (s *Server) appendParsed(ctx context.Context, req *pb.ModuleRequest, bad *pb.ModuleResponse, dst []byte) (buf, out []byte, err error) {
	if bad != nil {
		buf, err = appendMsg(dst, bad)
		return buf, buf, err
	}
	if c := req.Calls[len(req.Calls)-1].GetCollect(); c.GetCount() > 0 && len(c.GetPoints()) == 0 {
		if sc, ok := s.dev.(slabCollector); ok {
			return s.appendSlab(ctx, req, sc, c, dst)
		}
	}
	last := req.Calls[len(req.Calls)-1].GetCollectRange()
	if last == nil {
		resp := s.handle(ctx, req, req.Calls)
		buf, err = appendMsg(dst, resp)
		wipeResults(resp)
		return buf, buf, err
	}
	head := s.handle(ctx, req, req.Calls[:len(req.Calls)-1])
	failed := false
	for _, r := range head.Results {
		failed = failed || r.ErrorClass != ClassOK
	}
	var r *pb.Result
	switch rr, err := rangeFromPB(last); {
	case failed && req.StopOnError:
		r = &pb.Result{ErrorClass: ClassBadRequest, Error: "socket: skipped after an earlier error"}
	case err != nil:
		r = fail(err)
	default:
		buf, out, err := appendRangeMsg(ctx, s.dev, rr, head, dst)
		if err == nil {
			return buf, out, nil
		}
		clear(buf)
		if errors.Is(err, ErrTooLarge) {
			return dst[:0], nil, err
		}
		r = fail(err)
	}
	head.Results = append(head.Results, r)
	buf, err = appendMsg(dst[:0], head)
	wipeResults(head)
	return buf, buf, err
}

// slabCollector is a module that hands out a remembered slab during a
// callback (module.Durable): the server encodes it from there, with no
// copy in between.
type slabCollector interface {
	CollectSlab(ctx context.Context, first uint64, count int, emit func(*msg.Slab)) error
}

// slabChecker is a module that checks the bulk request a slab collect
// expects before the slab is handed out (module.Durable.CheckSlab).
type slabChecker interface {
	CheckSlab(ctx context.Context, first uint64, count int, expect *msg.Bulk, at int) error
}

// checkExpect checks a slab collect's expected request (expect; none: no
// check) before a fast path below hands the slab out: a slab generated for
// another request is refused whole. The expectation's shares are wiped.
func (s *Server) checkExpect(ctx context.Context, c *pb.CollectRequest) error {
	ex := c.GetExpect()
	if ex == nil {
		return nil
	}
	defer wipeBulk(ex)
	sc, ok := s.dev.(slabChecker)
	if !ok {
		return errors.New("socket: this module cannot check the request a slab was generated for")
	}
	return sc.CheckSlab(ctx, c.GetCounter(), n32(c.GetCount()), bulkFromPB(ex), n32(c.GetExpectAt()))
}

// slabHead runs the calls of req before its final collect. skipped: one
// failed and req stops on error, so the collect is not run (head then
// ends with its skip result).
func (s *Server) slabHead(ctx context.Context, req *pb.ModuleRequest) (head *pb.ModuleResponse, skipped bool) {
	head = s.handle(ctx, req, req.Calls[:len(req.Calls)-1])
	failed := false
	for _, r := range head.Results {
		failed = failed || r.ErrorClass != ClassOK
	}
	if failed && req.StopOnError {
		head.Results = append(head.Results, &pb.Result{ErrorClass: ClassBadRequest, Error: "socket: skipped after an earlier error"})
		return head, true
	}
	return head, false
}

// appendSlab is handleAppend for a request that ends with a range collect
// (a bulk's slab) from a slabCollector: the response is encoded while the
// module holds the slab, so each key is copied once, from the module's
// memory into buf.
func (s *Server) appendSlab(ctx context.Context, req *pb.ModuleRequest, sc slabCollector, c *pb.CollectRequest, dst []byte) (buf, out []byte, err error) {
	head, skipped := s.slabHead(ctx, req)
	defer wipeResults(head)
	if skipped {
		buf, err = appendMsg(dst, head)
		return buf, buf, err
	}
	emitted := false
	cerr := s.checkExpect(ctx, c)
	if cerr != nil {
		goto refused
	}
	cerr = sc.CollectSlab(ctx, c.GetCounter(), n32(c.GetCount()), func(sl *msg.Slab) {
		cr := &pb.CollectResponse{Counter: sl.First, Mode: uint32(sl.Mode), Slab: slabToPB(sl)}
		head.Results = append(head.Results, &pb.Result{Op: &pb.Result_Collect{Collect: cr}})
		buf, err = appendMsg(dst, head)
		cr.Slab = nil // the module's memory: not this response's to wipe
		emitted = true
	})
refused:
	if !emitted {
		if cerr == nil {
			cerr = errors.New("socket: the module emitted no slab")
		}
		head.Results = append(head.Results, fail(cerr))
		buf, err = appendMsg(dst, head)
	}
	if err != nil {
		clear(buf)
		return dst[:0], nil, err
	}
	return buf, buf, nil
}

// slabPinner is a slabCollector whose slab stays valid after the call
// until release (module.Durable): the server writes its keys to the socket
// from there, outside the module's lock, with no copy at all.
type slabPinner interface {
	CollectSlabPinned(ctx context.Context, first uint64, count int, emit func(*msg.Slab)) (release func(), err error)
}

// slabParts is appendSlab for a slabPinner: the message is buf[start:mid],
// the slab's keys, buf[mid:] — the bytes appendSlab writes, fields in
// proto.Marshal's order, the keys not copied.
func (s *Server) slabParts(ctx context.Context, req *pb.ModuleRequest, sp slabPinner, c *pb.CollectRequest, dst []byte) (buf []byte, out net.Buffers, release func(), err error) {
	head, skipped := s.slabHead(ctx, req)
	defer wipeResults(head)
	if skipped {
		buf, err = appendMsg(dst, head)
		return buf, net.Buffers{buf}, func() {}, err
	}
	start := len(dst)
	emitted := false
	release, cerr := func() {}, s.checkExpect(ctx, c)
	if cerr == nil {
		release, cerr = sp.CollectSlabPinned(ctx, c.GetCounter(), n32(c.GetCount()), func(sl *msg.Slab) {
			emitted = true
			buf, out, err = appendSlabParts(dst, head, sl)
		})
	}
	if !emitted {
		release()
		if cerr == nil {
			cerr = errors.New("socket: the module emitted no slab")
		}
		head.Results = append(head.Results, fail(cerr))
		buf, err = appendMsg(dst, head)
		out = net.Buffers{buf[start:]}
		release = func() {}
	}
	if err != nil {
		release()
		clear(buf)
		return dst[:0], nil, func() {}, err
	}
	return buf, out, release, nil
}

// appendSlabParts appends to dst the response of head's results and a
// collect answered with sl, as appendMsg would encode it, but for sl's
// keys: out is the message as dst[start:mid], sl.Keys, dst[mid:].
func appendSlabParts(dst []byte, head *pb.ModuleResponse, sl *msg.Slab) (buf []byte, out net.Buffers, err error) {
	full := slabToPB(sl)
	// The slab's fields before keys (1–7) and after (9–13).
	pre := &pb.Slab{First: full.First, N: full.N, Mode: full.Mode, Type: full.Type, InBits: full.InBits, OutBits: full.OutBits, Stride: full.Stride}
	post := &pb.Slab{AlphaShares: full.AlphaShares, BetaShares: full.BetaShares, PairTags: full.PairTags, Profile: full.Profile, Group: full.Group}
	cr := &pb.CollectResponse{Counter: sl.First, Mode: uint32(sl.Mode)}
	keys := len(sl.Keys)
	keysHdr := 0
	if keys > 0 {
		keysHdr = protowire.SizeTag(8) + protowire.SizeVarint(uint64(keys))
	}
	mo := proto.MarshalOptions{UseCachedSize: true}
	slabLen := proto.Size(pre) + keysHdr + keys + proto.Size(post)
	crLen := proto.Size(cr) + protowire.SizeTag(8) + protowire.SizeBytes(slabLen)
	resLen := protowire.SizeTag(6) + protowire.SizeBytes(crLen)
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	if dst, err = (proto.MarshalOptions{}).MarshalAppend(dst, head); err != nil {
		return dst, nil, err
	}
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(resLen))
	dst = protowire.AppendTag(dst, 6, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(crLen))
	if dst, err = mo.MarshalAppend(dst, cr); err != nil {
		return dst, nil, err
	}
	dst = protowire.AppendTag(dst, 8, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(slabLen))
	if dst, err = mo.MarshalAppend(dst, pre); err != nil {
		return dst, nil, err
	}
	if keys > 0 {
		dst = protowire.AppendTag(dst, 8, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(keys))
	}
	mid := len(dst)
	if dst, err = mo.MarshalAppend(dst, post); err != nil {
		return dst, nil, err
	}
	n := len(dst) - start - 4 + keys
	if n > MaxMessage {
		return dst, nil, ErrTooLarge
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(n))
	out = net.Buffers{dst[start:mid]}
	if keys > 0 {
		out = append(out, sl.Keys)
	}
	if len(dst) > mid {
		out = append(out, dst[mid:])
	}
	return dst, out, nil
}

// wipeResults clears the key shares a response's collect results hold:
// at the server once encoded (the collector owns them: the module handed
// them out), at the client when a response is not used.
func wipeResults(resp *pb.ModuleResponse) {
	for _, r := range resp.GetResults() {
		if c := r.GetCollect(); c != nil {
			clear(c.Key)
			clear(c.Evals)
			wipeSlabPB(c.Slab)
			wipeCorrPB(c.Corr)
		}
	}
}

func (s *Server) handle(ctx context.Context, req *pb.ModuleRequest, calls []*pb.Call) *pb.ModuleResponse {
	out := &pb.ModuleResponse{Results: make([]*pb.Result, 0, len(req.Calls))}
	failed := false
	for _, c := range calls {
		if failed && req.StopOnError {
			out.Results = append(out.Results, &pb.Result{ErrorClass: ClassBadRequest, Error: "socket: skipped after an earlier error"})
			continue
		}
		r := s.call(ctx, c)
		if r.ErrorClass != ClassOK {
			failed = true
		}
		out.Results = append(out.Results, r)
	}
	return out
}

func classOf(err error) uint32 {
	switch {
	case errors.Is(err, module.ErrBadRequest):
		return ClassBadRequest
	case errors.Is(err, module.ErrNotPaired):
		return ClassNotPaired
	case errors.Is(err, module.ErrLocked):
		return ClassLocked
	case errors.Is(err, module.ErrWitness):
		return ClassWitness
	}
	return ClassInternal
}

func fail(err error) *pb.Result { return &pb.Result{ErrorClass: classOf(err), Error: err.Error()} }

func (s *Server) call(ctx context.Context, c *pb.Call) *pb.Result {
	switch op := c.GetOp().(type) {
	case *pb.Call_Provision:
		r, err := s.dev.Provision(ctx, &msg.ProvisionRequest{Message: op.Provision.GetMessage()})
		if err != nil {
			return fail(err)
		}
		return &pb.Result{Op: &pb.Result_Provision{Provision: &pb.ProvisionResponse{Message: r.Message, Paired: r.Paired}}}
	case *pb.Call_Submit:
		req, err := submitReqFromPB(op.Submit)
		// Own shares: wipe the decoded copy whether or not it parsed.
		defer wipeBulk(op.Submit.GetBulk())
		clear(op.Submit.PackedShares)
		for _, sh := range op.Submit.Shares {
			sh.AlphaShare, sh.BetaShare, sh.Beta = 0, 0, 0
		}
		if err != nil {
			return fail(err)
		}
		r, err := s.dev.Submit(ctx, req)
		if err == nil && (req.Kind == msg.SubmitShares || req.Kind == msg.SubmitBulk) && s.journal != nil && len(r.Frames) > 0 {
			s.record(req, r)
		}
		clear(req.Shares)
		if err != nil {
			return fail(err)
		}
		return &pb.Result{Op: &pb.Result_Submit{Submit: submitRespToPB(r, op.Submit.GetPackFrames())}}
	case *pb.Call_PeerFrames:
		r, err := peerFrames(ctx, s.dev, &Frames{Data: op.PeerFrames.GetData(), Lens: op.PeerFrames.GetLens()})
		if err != nil {
			return fail(err)
		}
		return &pb.Result{Op: &pb.Result_PeerFrames{PeerFrames: &pb.PeerFramesResponse{Accepted: uint32(r.Accepted), Reject: r.Reject}}}
	case *pb.Call_CollectRange:
		rr, err := rangeFromPB(op.CollectRange)
		if err != nil {
			return fail(err)
		}
		b := newRangeRespBuilder(rr.Count)
		if err := collectRange(ctx, s.dev, rr, b.add); err != nil {
			return fail(err)
		}
		return &pb.Result{Op: &pb.Result_CollectRange{CollectRange: b.done()}}
	case *pb.Call_Poll:
		r, err := s.dev.Poll(ctx, &msg.PollRequest{})
		if err != nil {
			return fail(err)
		}
		locked := false
		if l, ok := s.dev.(interface{ Locked() bool }); ok {
			locked = l.Locked()
		}
		return &pb.Result{Op: &pb.Result_Poll{Poll: PollToPB(r, locked)}}
	case *pb.Call_Collect:
		r, err := s.dev.Collect(ctx, &msg.CollectRequest{Counter: op.Collect.GetCounter(), Points: op.Collect.GetPoints(),
			Count: n32(op.Collect.GetCount()), Corr: op.Collect.GetCorr(), Expect: bulkFromPB(op.Collect.GetExpect()), ExpectAt: n32(op.Collect.GetExpectAt())})
		wipeBulk(op.Collect.GetExpect())
		if err != nil {
			return fail(err)
		}
		return &pb.Result{Op: &pb.Result_Collect{Collect: collectRespToPB(r)}}
	case *pb.Call_Sync:
		return s.sync(ctx, op.Sync)
	}
	return &pb.Result{ErrorClass: ClassBadRequest, Error: "socket: call names no operation"}
}

func (s *Server) sync(ctx context.Context, r *pb.SyncRequest) *pb.Result {
	sy, ok := s.dev.(module.Syncer)
	if !ok {
		return &pb.Result{ErrorClass: ClassBadRequest, Error: "socket: this module keeps no counter witness"}
	}
	var resp pb.SyncResponse
	switch r.GetOp() {
	case pb.SyncRequest_OP_CHALLENGE:
		c, err := sy.Challenge(ctx)
		if err != nil {
			return fail(err)
		}
		resp.Data = c
	case pb.SyncRequest_OP_WITNESS:
		w, err := sy.Witness(ctx, r.GetData())
		if err != nil {
			return fail(err)
		}
		resp.Data = w
	case pb.SyncRequest_OP_RECONCILE:
		rc, err := sy.Reconcile(ctx, r.GetData())
		if err != nil {
			return fail(err)
		}
		resp.NextCounter, resp.RolledBack, resp.AdvancedFrom, resp.Dropped = rc.Next, rc.RolledBack, rc.From, uint64(rc.Dropped)
	default:
		return &pb.Result{ErrorClass: ClassBadRequest, Error: fmt.Sprintf("socket: unknown sync op %d", r.GetOp())}
	}
	return &pb.Result{Op: &pb.Result_Sync{Sync: &resp}}
}

// record journals the keystream positions of a share submission.
func (s *Server) record(req *msg.SubmitRequest, r *msg.SubmitResponse) {
	var line []byte
	if b := req.Bulk; req.Kind == msg.SubmitBulk && b != nil && b.Mode == msg.Bound {
		for i := range r.Count {
			line = strconv.AppendUint(line, r.FirstCounter+uint64(i), 10)
			line = append(line, '\n')
		}
	}
	for i, sh := range req.Shares {
		if sh.Mode != msg.Derived {
			line = strconv.AppendUint(line, r.FirstCounter+uint64(i), 10)
			line = append(line, '\n')
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.journal.Write(line); err != nil {
		s.log.Error("socket: journal write failed", "err", err)
	}
}
