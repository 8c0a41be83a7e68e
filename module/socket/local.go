package socket

import (
	"context"

	"github.com/kord-fss/kord/module"
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
