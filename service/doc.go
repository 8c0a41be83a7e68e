// Package service is a kord party as a running service: it serves
// applications over gRPC (KeySource), talks to the peer party over gRPC
// (PeerLink) and to its own module over the module socket.
//
// Party 0 orders the requests: it takes application requests in arrival
// order, forms batches of up to Batch keys, submits its shares to its
// module and sends the batch header (request ids, shapes, first counter,
// a chained transcript hash) with its frames to party 1, keeping up to
// InFlight batches outstanding. Party 1 claims its own requests with the
// same ids, submits them in party 0's order, opens party 0's frames, and
// answers with its frames and a digest of its outputs' pair tags (which
// its module computes from each key's counter, shape, α and β). Party 0
// opens those frames, compares digests and only then
// delivers and confirms; party 1 delivers on the confirmation. Any
// disagreement — counters, transcript, digest, a rejected frame, a lost
// or late message — ends the session; the next session starts with the
// rollback witness, which moves both modules forward to a common counter,
// and the undelivered requests are batched again. No application is ever
// handed a key whose pair was not confirmed. An id party 1 has no request
// for costs only itself: that batch alone is refused, before any frame is
// opened, and the session goes on (follower.go, follower.skip). A party that
// restarts completes, from its module, the pairs generated before its
// crash when their ids are resent (recover.go).
//
// The files, one concept each:
//
//	party.go      the Party: Config, New, Run, Close, the peer link's dialing
//	caller.go     who calls the application API (application identity, operator)
//	keysource.go  the application API (KeySource): the Keys stream, Get, Status
//	window.go     an application stream's order and its bound on keys held
//	ids.go        the ids used on one stream
//	request.go    a KeyRequest parsed into a job, every field checked
//	packed.go     packed requests (many requests of a few shapes in one message)
//	job.go        the job: one request from admission to its answer
//	jobout.go     a job's outputs: views over slabs, wiping, encoding as replies
//	reply.go      the packed replies of one application message
//	admission.go  the bound on keys held, unique ids per application
//	admit.go      requests admitted, refused, and their pairs delivered
//	queue.go      party 0's queue of requests waiting for a batch
//	pending.go    party 1's pending requests waiting for party 0's batch
//	peer.go       what both sides of a session share: failed and held batches, unmatched ids
//	leader.go     the session (party 0's side, leader), its link interface
//	follower.go   party 1's side of a session
//	bulk.go       bulk batches: runs of one shape as one module request
//	bulkreq.go    a bulk run's module request (submission, resend expectation)
//	items.go      a batch's items as packed parallel lists
//	confirm.go    the confirmation party 1 checks against its own module
//	deadline.go   every peer read and held batch bounded in time
//	spent.go      the spent rule: no batch outcome is an oracle on α
//	ledger.go     this site's own durable record of what it served
//	recover.go    recovery at the handshake after a real restart
//	resend.go     answering an application's resends after a restart
//	void.go       void and spent notices across a restart
//	version.go    the peer protocol version
//	slabfd.go     same-host slabs as sealed memfds (--module-slab-fds)
//	local.go      LocalPair: both parties in one process (memlink.go: its link)
//	connlink.go   a LocalPair's peer link over a byte stream (a real or shaped TCP connection)
//	pairing.go    pairing through the parties, and the peer link's server
//	metrics.go    the Prometheus series (none carries a secret)
package service
