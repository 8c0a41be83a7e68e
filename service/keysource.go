// The application API (KeySource): the Keys stream, Get and Status.

package service

import (
	"context"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Keys answers a stream of requests in order. Replies to consecutive
// requests that are ready together share one message; packed (one buffer
// for all their keys) when the client asked for packed_replies.
func (p *Party) Keys(stream pb.KeySource_KeysServer) error {
	ctx := stream.Context()
	app := appOf(ctx) // the stream's requests are this application's
	order := make(chan *job, streamOrder)
	// held bounds the keys of this stream that are admitted but not yet
	// sent (MaxStreamKeys). When it is full, reading stops and gRPC's flow
	// control pushes back on the application.
	held := newWindow(p.cfg.MaxStreamKeys)
	errc := make(chan error, 1)
	stashed := make(chan *job, 1) // the job the reply loop held when it ended
	var packed, stride atomic.Bool
	// conn passes fds to a same-host application (its Unix connection);
	// nil elsewhere. fds: the stream asked for slab_fds on it.
	conn := appConn(ctx)
	fds := &fdStream{p: p, app: app}
	defer fds.end()
	var seen idSet // the ids accepted on this stream
	// notices: void notices for ids this stream got keys for (recover.go).
	notices := make(chan *pb.KeyReply, 64)
	go func() {
		defer close(order)
		for {
			rs, err := stream.Recv()
			if err != nil {
				return
			}
			if rs.PackedReplies {
				packed.Store(true)
			}
			if rs.StrideReplies {
				stride.Store(true)
			}
			if rs.SlabFds && conn != nil {
				fds.start()
			}
			js := p.requestsOf(app, rs, &seen, notices)
			for k, j := range js {
				if held.acquire(ctx, j.keys()) == nil {
					select {
					case order <- j:
						continue
					case <-ctx.Done():
					}
				}
				// The stream is gone.
				if p.cfg.Party == 1 {
					// Admitted but never to be answered on this stream.
					ids := make([]uint64, 0, len(js)-k)
					for _, j := range js[k:] {
						ids = append(ids, j.id)
					}
					p.pend.fail(app, ids, ErrClassUnavailable, "application stream closed")
				}
				return
			}
		}
	}()
	go func() {
		var out pb.KeyReplies
		// The packed buffers outlive the stream (a stream often carries a
		// few batches): they grow once per process, not once per stream.
		rb := packedPool.Get().(*replyBuf)
		pk := rb.pk
		defer func() { rb.reset(); packedPool.Put(rb) }()
		replies, keys := 0, 0
		// inMsg are the jobs in the message being built: once it is sent
		// (or failed to send), their key bytes are wiped and their keys
		// leave the stream's window.
		var inMsg []*job
		send := func() error {
			if replies == 0 {
				return nil
			}
			out.Packed = nil
			lent := false
			if len(pk.Ids) > 0 {
				rb.finish(stride.Load())
				out.Packed = pk
				if fds.on.Load() && rb.handOn(conn) {
					// The keys go as the sealed memfd they are in: never
					// written here, and nothing to lend.
					p.m.slabsHanded.Inc()
				} else if rb.aliased {
					// The keys are one stretch of a slab: the codec sends
					// them as they are and wipes them once gRPC has
					// written them (kordpb.LendKeys).
					keys := pk.Keys
					// The jobs' references to the pooled socket
					// buffers their keys are in go with the loan.
					var refs []slabRef
					for _, j := range inMsg {
						if r, ok := j.takeRef(j.keyViews()); ok {
							refs = append(refs, r)
						}
					}
					pb.LendKeys(pk, func() {
						socket.WipeKeys(keys)
						for _, r := range refs {
							r.release()
						}
					})
					lent = true
				}
			}
			err := stream.Send(&out)
			if lent {
				if done := pb.Unlend(pk); done != nil {
					done() // never encoded: wiped here
				}
			}
			clear(out.Replies)
			out.Replies = out.Replies[:0]
			rb.reset()
			n := 0
			for _, j := range inMsg {
				n += j.keys()
				j.wipeOutputs(lent)
			}
			clear(inMsg)
			inMsg = inMsg[:0]
			held.release(n)
			replies, keys = 0, 0
			return err
		}
		add := func(j *job) error {
			// One message carries replies of one form: a reply of the
			// other form sends what is built first.
			asPacked := j.reply == nil && packed.Load() && j.corr == nil && !j.vecShares() // correlations: KeyShare.corr; drawn vectors: KeyShare.beta_shares
			if asPacked && len(out.Replies) > 0 || !asPacked && len(pk.Ids) > 0 {
				if err := send(); err != nil {
					j.wipeOutputs(false)
					return err
				}
			}
			if asPacked {
				rb.add(j)
			} else {
				out.Replies = append(out.Replies, j.pbReply())
			}
			inMsg = append(inMsg, j)
			replies++
			keys += j.nOut()
			return nil
		}
		// next is a job taken from order that was not answered yet: the
		// message goes out with the replies that are ready, without waiting
		// for it (replies of one batch go out as soon as it is delivered).
		var next *job
		defer func() { stashed <- next }()
		for {
			j := next
			next = nil
			if j == nil {
				var ok bool
				select {
				case j, ok = <-order:
				case n := <-notices:
					// A void notice for an id this stream got keys for.
					if err := stream.Send(&pb.KeyReplies{Replies: []*pb.KeyReply{n}}); err != nil {
						errc <- err
						return
					}
					continue
				}
				if !ok {
					break
				}
			}
			if err := j.wait(ctx); err != nil {
				next = j
				errc <- err
				return
			}
			if err := add(j); err != nil {
				errc <- err
				return
			}
		more:
			// A message whose keys may go as the memfd of their slab
			// (handOn) takes the slab's every key, however many: their
			// bytes are never copied here.
			for replies < 1024 && (keys < 16384 || fds.on.Load() && rb.aliased && rb.start == 0 && rb.end < len(rb.buf)) {
				select {
				case j2, ok := <-order:
					if !ok {
						break more
					}
					if !j2.answered() || keys >= minLentKeys && rb.breaks(j2) {
						// Not ready; or its keys are not the next ones of the
						// slab the message's keys are a stretch of, which
						// adding it would copy out of the slab (and out of
						// the codec's no-copy path): it opens the next
						// message instead.
						next = j2
						break more
					}
					if err := add(j2); err != nil {
						errc <- err
						return
					}
				default:
					break more
				}
			}
			if err := send(); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	err := <-errc
	left := <-stashed
	if ctx.Err() != nil && p.cfg.Party == 1 {
		// The application went away: drop its unclaimed requests.
		var ids []uint64
		if left != nil {
			ids = append(ids, left.id)
		}
		for j := range order {
			ids = append(ids, j.id)
		}
		p.pend.fail(app, ids, ErrClassUnavailable, "application stream closed")
	}
	return err
}

var packedPool = sync.Pool{New: func() any { return newReplyBuf() }}

// Get answers one request.
func (p *Party) Get(ctx context.Context, r *pb.KeyRequest) (*pb.KeyReply, error) {
	j := p.requestOf(appOf(ctx), r)
	if err := j.wait(ctx); err != nil {
		if p.cfg.Party == 1 {
			p.pend.fail(j.app, []uint64{j.id}, ErrClassUnavailable, "request cancelled")
		}
		return nil, status.FromContextError(err).Err()
	}
	if j.code != codes.OK {
		// Refused before it was queued: a full party or a duplicate id.
		return nil, status.Error(j.code, j.reply.Error)
	}
	return j.pbReply(), nil
}

// Status reports the party and its module.
func (p *Party) Status(ctx context.Context, _ *pb.StatusRequest) (*pb.StatusReply, error) {
	s := &pb.StatusReply{Party: uint32(p.cfg.Party), PeerConnected: p.peerUp.Load(), KeysDelivered: p.keysDelivered.Load(),
		Batches: p.batches.Load(), Resyncs: p.resyncs.Load(), FrameBytesSent: p.frameBytes.Load(), Rounds: p.rounds.Load(),
		InFlight: p.inFlight.Load(), Session: p.sessions.Load(), PackedRequests: true}
	if p.cfg.Party == 0 {
		s.Pending = uint64(p.q.size())
	} else {
		s.Pending = uint64(p.pend.size())
	}
	res, err := p.mod.Do(ctx, []socket.Call{{Poll: true}}, false)
	if err == nil && res[0].Err == nil {
		s.Module = socket.PollToPB(res[0].Poll, res[0].Locked)
		s.Paired = res[0].Poll.Paired
		p.setNext(res[0].Poll.NextCounter, false)
		p.m.floor.Set(float64(res[0].Poll.PeerFloor))
	}
	return s, nil
}
