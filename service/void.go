package service

import (
	"context"
	"fmt"
	"sync"

	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Void and spent notices across a restart (recover.go): tombstones of
// requests this site failed spent, void reports to the peer (VoidNotice,
// Batch.void_ids, BatchReply.void_ids) and the handling of the peer's.
// Every list names each id with its application identity (parallel
// lists on the peer link): a report reaches only that application's
// request.

// tombstones lists ids this site failed with class, for a restarted peer.
func tombstones(ids []rid, class string) []*pb.RecentItem {
	out := make([]*pb.RecentItem, len(ids))
	for i, id := range ids {
		out[i] = &pb.RecentItem{Item: &pb.BatchItem{App: id.app, Id: id.id}, ErrorClass: class}
	}
	return out
}

// settleDoubt (party 0, at a session start) settles the queued jobs that
// were in batches lost with the previous session while party 0's module
// had not opened party 1's frames for them: party 1's module may have
// opened party 0's (its spent report comes at the hello). If party 1
// restarted (fresh), that report is lost with it: they fail spent, and
// their ids are returned for party 1 to answer a resend alike. Otherwise
// party 1's report has been applied and they are batched again.
func (p *Party) settleDoubt(fresh bool) []rid {
	js := p.q.takeDoubt(fresh)
	ids := make([]rid, 0, len(js))
	for _, j := range js {
		ids = append(ids, rid{j.app, j.id})
	}
	// Recorded before the application is told (Party.back).
	if !p.ledger.answered(ids, ErrClassSpent) {
		return nil // going down: the restarted party answers them
	}
	for _, j := range js {
		j.fail(ErrClassSpent, "request %d: party 1 restarted while the request was in a batch sent to it, so its module may have opened this site's frame; α spent: choose a fresh α", j.id)
		// Also in the spent log: if this handshake fails before party 1
		// has the tombstones, the next hello still carries them.
		p.logSpent(j)
	}
	if len(js) > 0 {
		p.m.rejects.WithLabelValues(ErrClassSpent).Add(float64(len(js)))
	}
	return ids
}

// voidReports holds this party's void reports for the peer: those still
// to send, and those sent and not yet known read.
//
// A report is known read once the peer answers a message sent after it:
// each peer reads its link in order and handles a report before the next
// message, so party 0's confirmation of batch s (party 1's reply to batch
// s) comes after party 0 (party 1) read every report that went out before
// that batch reply (that batch). A report that went out and is not known
// read when its session ends goes out again in the next one: the session
// may have broken with it unread (a peer drops what it reads while its
// session ends). A report read twice changes nothing the second time
// (Party.peerVoid).
type voidReports struct {
	mu  sync.Mutex
	out []rid // to send
	// sent: reports that went out, each with the mark of its send; a
	// message's cover is the last mark when it was sent, so its answer
	// shows every report with a mark up to the cover read.
	sent []sentVoid
	mark uint64
	// kick wakes the session's void sender (sendVoids) when out gets an id.
	kick chan struct{}
}

type sentVoid struct {
	ids  []rid
	mark uint64
}

// addVoid notes a request to report void to the peer.
func (p *Party) addVoid(id rid) {
	v := &p.voids
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.out) < maxSpentLog {
		v.out = append(v.out, id)
	}
	v.wake()
}

// wake wakes the session's void sender, if it is not already woken.
func (v *voidReports) wake() {
	select {
	case v.kick <- struct{}{}:
	default:
	}
}

// sendVoids sends the requests to report void as soon as there are any
// (VoidNotice), until ctx ends or a send fails; send is the session's.
func (p *Party) sendVoids(ctx context.Context, send func(*pb.PeerMsg) error) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.voids.kick:
		}
		v := p.takeVoid()
		if len(v) == 0 {
			continue
		}
		ids, apps := splitRids(v)
		err := send(&pb.PeerMsg{M: &pb.PeerMsg_VoidNotice{VoidNotice: &pb.VoidNotice{Ids: ids, Apps: apps}}})
		// Marked only now that the send is done: a message whose cover
		// includes this mark was sent after the notice. A failed send
		// ends the session, which sends them again (voidsUnread).
		p.voidsSent(v)
		if err != nil {
			return
		}
	}
}

// takeVoid returns and clears the requests to report void to the peer, at
// most maxSpentLog of them (the most a peer takes in one report, peerVoid):
// the rest stay for the next report, and the void sender is woken for it.
func (p *Party) takeVoid() []rid {
	v := &p.voids
	v.mu.Lock()
	defer v.mu.Unlock()
	n := min(len(v.out), maxSpentLog)
	out := v.out[:n:n]
	v.out = v.out[n:]
	if len(v.out) == 0 {
		v.out = nil
	} else {
		v.wake()
	}
	return out
}

// voidsSent notes ids as sent to the peer, and returns the cover of a
// message sent from now on: ids carried in a message (a batch, a batch
// reply) are noted before it is sent, so that its answer shows them read.
func (p *Party) voidsSent(ids []rid) (cover uint64) {
	v := &p.voids
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(ids) > 0 {
		v.mark++
		v.sent = append(v.sent, sentVoid{ids, v.mark})
	}
	return v.mark
}

// voidsRead drops the sent reports the peer is known to have read: it
// answered a message whose cover was cover.
func (p *Party) voidsRead(cover uint64) {
	v := &p.voids
	v.mu.Lock()
	defer v.mu.Unlock()
	i := 0
	for i < len(v.sent) && v.sent[i].mark <= cover {
		i++
	}
	v.sent = v.sent[i:]
}

// voidsUnread puts the reports sent in a session that has ended, and not
// known read, back to be sent in the next one; called once the session's
// senders have stopped.
func (p *Party) voidsUnread() {
	v := &p.voids
	v.mu.Lock()
	defer v.mu.Unlock()
	var back []rid
	for _, s := range v.sent {
		back = append(back, s.ids...)
	}
	v.sent = nil
	if len(back) == 0 {
		return
	}
	v.out = append(back, v.out...)
	v.wake()
}

// splitRids is ids as the peer link's parallel lists: the ids and, in
// order, their applications (nil when every one is the anonymous "").
func splitRids(v []rid) (ids []uint64, apps []string) {
	ids = make([]uint64, len(v))
	named := false
	for i, r := range v {
		ids[i] = r.id
		named = named || r.app != ""
	}
	if named {
		apps = make([]string, len(v))
		for i, r := range v {
			apps[i] = r.app
		}
	}
	return ids, apps
}

// joinRids reads the peer's parallel lists back: apps is empty (every
// id's application is "") or one per id; anything else is an error.
func joinRids(ids []uint64, apps []string) ([]rid, error) {
	if len(apps) != 0 && len(apps) != len(ids) {
		return nil, fmt.Errorf("service: the peer named %d applications for %d ids", len(apps), len(ids))
	}
	out := make([]rid, len(ids))
	for i, id := range ids {
		out[i].id = id
		if len(apps) != 0 {
			out[i].app = apps[i]
		}
	}
	return out, nil
}

// peerVoid handles the peer's report that it answered requests void
// after its restart (ids with, in order, their applications apps): this
// site delivered their keys, and the stream that got them (if it is still
// open) gets a second reply for each, class void, once however often the
// report comes (it is sent again after a broken session). A report goes only to
// the application it names: another application's request under the same
// id is untouched. A malformed report is dropped whole.
func (p *Party) peerVoid(ids []uint64, apps []string) {
	if len(ids) == 0 || len(ids) > maxSpentLog {
		return
	}
	rs, err := joinRids(ids, apps)
	if err != nil {
		p.log.Warn("ignoring the peer's void report", "err", err)
		return
	}
	want := make(map[rid]bool, len(rs))
	for _, r := range rs {
		want[r] = true
	}
	p.recentMu.Lock()
	var notes []chan<- *pb.KeyReply
	var found []rid
	for i := range p.recent {
		r := &p.recent[i]
		if r.n > 0 && !r.voided && want[r.key()] {
			want[r.key()] = false
			r.voided = true // a report sent again is not a second notice
			notes, found = append(notes, r.notice), append(found, r.key())
		}
	}
	p.recentMu.Unlock()
	var known []rid
	for _, r := range rs {
		if _, ok := p.ledger.get(r); ok {
			known = append(known, r)
		}
	}
	p.ledger.answered(known, ErrClassVoid)
	for i, r := range found {
		p.m.rejects.WithLabelValues(ErrClassVoid).Inc()
		p.log.Warn("the peer could not complete a pair after its restart: the keys delivered here for this id are void", "app", r.app, "id", r.id)
		if notes[i] == nil {
			continue
		}
		select {
		case notes[i] <- &pb.KeyReply{Id: r.id, ErrorClass: ErrClassVoid, Error: fmt.Sprintf(
			"request %d: the other site restarted and could not complete this pair; the key share delivered here for this id is void: discard it; α spent: choose a fresh α", r.id)}:
		default: // the stream is gone or not reading: the log and metric remain
		}
	}
}
