package service

import (
	"context"

	"github.com/kord-fss/kord/module/socket"
)

// Same-host slabs (issue 34): a party whose module is on a Unix socket
// takes a bulk's slab as a sealed memfd of the module's, mapped read-only
// and read in place (socket.Client.DoMapped); its keys are never written
// here (socket.WipeKeys leaves a mapping alone) and the mapping goes with
// the last reference to the response buffer.

// releaseMapped gives back, on a failed batch, the results' reference to
// a response buffer holding a read-only slab mapping (the jobs' own
// references go as they are wiped): the mapping goes with the last one.
// Such a batch holds only slab collects (doFinish), whose outputs were
// wiped, so nothing else is a view of the buffer.
func releaseMapped(res []socket.Result) {
	done := map[*socket.RecvBuf]bool{}
	for _, r := range res {
		if r.Buf != nil && !done[r.Buf] && r.Collect != nil && r.Collect.Slab != nil && socket.IsMapped(r.Collect.Slab.Keys) {
			done[r.Buf] = true
			r.Buf.Release()
		}
	}
}

// slabMapper is a module that can hand slabs out as read-only mappings of
// sealed memfds (socket.Client.DoMapped).
type slabMapper interface {
	DoMapped(ctx context.Context, calls []socket.Call, stopOnError bool) ([]socket.Result, error)
}

// doFinish runs the finishing calls (finishCalls) of a batch of app's:
// when every collect is of a slab and app takes slabs as memfds
// (wantsFDs), a module on a socket may hand the slabs' keys as sealed
// memfds, read in place or handed on (their buffers' references then
// cover every view: collected); else they come as bytes.
func (p *Party) doFinish(ctx context.Context, app string, calls []socket.Call) ([]socket.Result, error) {
	if m, ok := p.mod.(slabMapper); ok && onlySlabCollects(calls) && p.wantsFDs(app) {
		return m.DoMapped(ctx, calls, true)
	}
	if m, ok := p.mod.(byteCollector); ok {
		return m.DoBytes(ctx, calls, true)
	}
	return p.mod.Do(ctx, calls, true)
}

// byteCollector is a module that can be asked for a batch's slabs as
// bytes even where it may hand them as memfds (socket.Client.DoBytes): a
// batch of an application that takes no memfds, whose keys the party
// copies into its replies anyway.
type byteCollector interface {
	DoBytes(ctx context.Context, calls []socket.Call, stopOnError bool) ([]socket.Result, error)
}

// batchApp is the application a batch's jobs are of ("" for none).
func batchApp(js []*job) string {
	if len(js) == 0 {
		return ""
	}
	return js[0].app
}

// onlySlabCollects reports whether every collect among calls is of a
// bulk's slab (and there is one).
func onlySlabCollects(calls []socket.Call) bool {
	found := false
	for _, c := range calls {
		switch {
		case c.Range != nil:
			return false
		case c.Collect != nil:
			if c.Collect.Count <= 0 || c.Collect.Corr || len(c.Collect.Points) > 0 {
				return false
			}
			found = true
		}
	}
	return found
}
