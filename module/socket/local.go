package socket

import (
	"context"
	"slices"

	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
)

// Module is what a host needs of its module: the Device interface, the
// rollback witness and batched calls. *Client is one; Local adapts an
// in-process module.
type Module interface {
	module.Device
	module.Syncer
	Do(ctx context.Context, calls []Call, stopOnError bool) ([]Result, error)
}

// LocalModule is an in-process module (e.g. *module.Durable) behind the
// Module interface; Do runs the calls one by one.
type LocalModule struct {
	module.Device
	module.Syncer
}

// Local adapts an in-process device that also keeps a witness.
func Local(d interface {
	module.Device
	module.Syncer
}) *LocalModule {
	return &LocalModule{Device: d, Syncer: d}
}

// Do runs calls in order.
func (l *LocalModule) Do(ctx context.Context, calls []Call, stopOnError bool) ([]Result, error) {
	out := make([]Result, len(calls))
	failed := false
	for i, c := range calls {
		if failed && stopOnError {
			out[i].Err = &RemoteError{Class: ClassBadRequest, Msg: "socket: skipped after an earlier error"}
			continue
		}
		switch {
		case c.Submit != nil:
			out[i].Submit, out[i].Err = l.Submit(ctx, c.Submit)
			if out[i].Err == nil {
				out[i].Packed = PackFrames(out[i].Submit.Frames)
			}
		case c.Frames != nil:
			out[i].Frames, out[i].Err = peerFrames(ctx, l.Device, c.Frames)
		case c.Range != nil:
			if out[i].Err = checkRange(c.Range); out[i].Err == nil {
				out[i].Range = make([]msg.CollectResponse, 0, c.Range.Count)
				// emit's output is only valid during the call: copy it.
				out[i].Err = collectRange(ctx, l.Device, c.Range, func(r *msg.CollectResponse) {
					o := *r
					o.Key, o.Evals = slices.Clone(r.Key), slices.Clone(r.Evals)
					out[i].Range = append(out[i].Range, o)
				})
			}
		case c.Collect != nil:
			out[i].Collect, out[i].Err = l.Collect(ctx, c.Collect)
		case c.Poll:
			out[i].Poll, out[i].Err = l.Poll(ctx, nil)
			if lk, ok := l.Device.(interface{ Locked() bool }); ok {
				out[i].Locked = lk.Locked()
			}
		}
		if out[i].Err != nil {
			failed = true
		}
	}
	return out, nil
}
