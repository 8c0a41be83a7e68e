package adversary

import (
	"context"
	"sync"

	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
)

// output is one output of the adversary's module, copied as it left the
// module: a key share (with its derived shares) or a correlation's
// shares. The oracle pairs the honest site's outputs with these.
type output struct {
	key         []byte
	alpha, beta uint64
	tag         [msg.PairTagSize]byte
	corr        *msg.CorrShares
}

// advModule is the adversary's module as its party sees it: the real
// module client, with every output it hands out recorded (by counter),
// and an optional rewrite of the calls the party makes (an attack: the
// host has its module draw something other than what the party asked).
type advModule struct {
	socket.Module
	mu      sync.Mutex
	outs    map[uint64]output
	rewrite func([]socket.Call) []socket.Call
}

func (a *advModule) setRewrite(f func([]socket.Call) []socket.Call) {
	a.mu.Lock()
	a.rewrite = f
	a.mu.Unlock()
}

func (a *advModule) Do(ctx context.Context, calls []socket.Call, stop bool) ([]socket.Result, error) {
	a.mu.Lock()
	rw := a.rewrite
	a.mu.Unlock()
	if rw != nil {
		calls = rw(calls)
	}
	res, err := a.Module.Do(ctx, calls, stop)
	a.note(res)
	return res, err
}

func (a *advModule) Collect(ctx context.Context, r *msg.CollectRequest) (*msg.CollectResponse, error) {
	c, err := a.Module.Collect(ctx, r)
	if err == nil {
		a.note([]socket.Result{{Collect: c}})
	}
	return c, err
}

// note copies the outputs of res (the party wipes them after use).
func (a *advModule) note(res []socket.Result) {
	a.mu.Lock()
	defer a.mu.Unlock()
	one := func(o *msg.CollectResponse) {
		a.outs[o.Counter] = output{key: append([]byte(nil), o.Key...), alpha: o.AlphaShare, beta: o.BetaShare, tag: o.PairTag}
	}
	for _, r := range res {
		if r.Err != nil {
			continue
		}
		for i := range r.Range {
			one(&r.Range[i])
		}
		c := r.Collect
		switch {
		case c == nil:
		case c.Slab != nil:
			sl := c.Slab
			for i := 0; i < sl.N; i++ {
				o := output{key: append([]byte(nil), sl.Key(i)...), tag: [msg.PairTagSize]byte(sl.PairTag(i))}
				if len(sl.AlphaShares) == sl.N {
					o.alpha = sl.AlphaShares[i]
				}
				if len(sl.BetaShares) == sl.N {
					o.beta = sl.BetaShares[i]
				}
				a.outs[sl.First+uint64(i)] = o
			}
		case c.Corr != nil:
			cs := *c.Corr
			cs.A, cs.R, cs.Z = append([]uint64(nil), cs.A...), append([]uint64(nil), cs.R...), append([]uint64(nil), cs.Z...)
			a.outs[cs.Counter] = output{corr: &cs, tag: cs.PairTag}
		default:
			one(c)
		}
	}
}

func (a *advModule) out(c uint64) (output, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	o, ok := a.outs[c]
	return o, ok
}
