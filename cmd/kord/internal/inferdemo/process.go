package inferdemo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/gates"
	"github.com/kord-fss/kord/infer"
	"github.com/kord-fss/kord/internal/both"
)

// The online parties and the dealer as processes of their own (the
// five-process demo, Processes): RunParty is one online party —
// its keys and correlations from its own party daemon (PartySupply), the
// other party over a real TCP link — and RunDealer the trusted-dealer
// baseline, which ships each party its material over that party's own
// link. Each party measures, per image, both key supplies and the online
// phase in the same run.

// PartyConfig is one online party.
type PartyConfig struct {
	B int
	// Model: party 0's has its weights; party 1 needs only the
	// architecture (its weights, if any, are not used).
	Model *infer.Model
	// Images (party 1): the quantized inputs, one evaluation each. Party
	// 0 runs Count evaluations.
	Images [][]int64
	Count  int
	// App is the party's own daemon; FirstID the first request id (the
	// same at both parties).
	App     *client.Client
	FirstID uint64
	// Peer is the online link to the other party; Dealer, when not nil,
	// the trusted dealer's link to this party (the baseline measured
	// next to the daemons' supply; its material is parsed and wiped).
	Peer, Dealer net.Conn
	// Ready, when not nil, is called once the session is open and
	// before the first image (the driver's go signal).
	Ready func(PartySession) error
	// Report receives each image's outcome.
	Report func(PartyImage) error
	// PrefetchBytes, when it holds two evaluations' material or more,
	// adds an overlapped pass: after the images with the key supply and
	// the online phase timed apart, the same images again with the
	// material of the next evaluations fetched from the daemon while the
	// current one is evaluated, at most PrefetchBytes of material (the
	// evaluation in use and those fetched ahead) held at once.
	PrefetchBytes int64
}

// PartySession is what a party reports once its session is open.
type PartySession struct {
	B                  int   `json:"party"`
	Keys               int   `json:"keys_per_image"`
	Corrs              int   `json:"correlations_per_image"`
	MaterialBytes      int64 `json:"material_bytes_per_image"`
	CorrWords          int   `json:"correlation_words_per_image"`
	WeightMaskWords    int   `json:"weight_mask_words"`
	SessionOfflineNs   int64 `json:"session_offline_ns"`
	SessionOnlineNs    int64 `json:"session_online_ns"`
	SessionBytes       int64 `json:"session_online_bytes"`
	DealerSessionNs    int64 `json:"dealer_session_ns"`
	DealerSessionBytes int64 `json:"dealer_session_bytes"`
	// PrefetchWindow is the evaluations' material held at once in the
	// overlapped pass (0: no overlapped pass; its images follow the
	// others, Index counting on).
	PrefetchWindow int `json:"prefetch_window,omitempty"`
}

// PartyImage is one evaluation at one party.
type PartyImage struct {
	B           int     `json:"party"`
	Index       int     `json:"index"`
	Logits      []int64 `json:"logits,omitempty"` // party 1
	KeySupplyNs int64   `json:"key_supply_ns"`
	DealerNs    int64   `json:"dealer_ns"`
	DealerBytes int64   `json:"dealer_bytes"`
	OnlineNs    int64   `json:"online_ns"`
	OnlineBytes int64   `json:"online_bytes"`
	Rounds      int64   `json:"rounds"`
	// Overlapped: an image of the overlapped pass; KeySupplyNs is then
	// the fetch's own time (alongside the previous online phase) and
	// KeyWaitNs the time the online phase waited for its material.
	Overlapped bool  `json:"overlapped,omitempty"`
	KeyWaitNs  int64 `json:"key_wait_ns,omitempty"`
}

// RunParty runs one online party: its session through its daemon (weight
// masks drawn, weights opened once), then per image the dealer's material
// (received, parsed, wiped), the daemon's material, and the online phase
// with the other party. Party 1's image sizes are checked before any
// request. It stops at the first error, which names the image; no
// further key or correlation is requested after it.
func RunParty(ctx context.Context, cfg PartyConfig) error {
	b, m := cfg.B, cfg.Model
	if b != 0 && b != 1 {
		return fmt.Errorf("infer: party must be 0 or 1, not %d", b)
	}
	if m == nil || cfg.App == nil || cfg.Peer == nil {
		return errors.New("infer: a party needs a model, its daemon and a link to the other party")
	}
	shapes, err := m.Shapes()
	if err != nil {
		return err
	}
	n := cfg.Count
	if b == 1 {
		n = len(cfg.Images)
		for i, x := range cfg.Images {
			if len(x) != shapes[0].Len() {
				return fmt.Errorf("infer: image %d has %d values; the model takes %d (%d×%d×%d)", i, len(x), shapes[0].Len(), shapes[0].C, shapes[0].H, shapes[0].W)
			}
		}
	}
	if n < 1 {
		return errors.New("infer: a party needs at least one evaluation")
	}
	arch := m.Arch()
	mine := m
	if b == 1 {
		mine = arch
	}
	var info PartySession
	info.B = b
	t0 := time.Now()
	sctx, scancel := context.WithCancel(ctx) // ends a fetch under way
	defer scancel()
	ps, sess, err := infer.NewPartySupply(sctx, b, cfg.App, arch, cfg.FirstID)
	if err != nil {
		return err
	}
	defer ps.Close()
	defer sess.Wipe()
	info.SessionOfflineNs = time.Since(t0).Nanoseconds()
	info.Keys, info.Corrs, info.MaterialBytes = ps.PlanCounts(m.Ring)
	info.CorrWords = ps.CorrWords()
	info.WeightMaskWords = sess.WeightMaskWords()
	if info.MaterialBytes > 0 && cfg.PrefetchBytes/info.MaterialBytes >= 2 {
		info.PrefetchWindow = int(min(cfg.PrefetchBytes/info.MaterialBytes, int64(n)+1))
	}
	if cfg.Dealer != nil {
		t0 = time.Now()
		data, err := ReadShipment(cfg.Dealer)
		if err != nil {
			return fmt.Errorf("infer: receiving the dealer's session: %w", err)
		}
		info.DealerSessionBytes = 8 + int64(len(data))
		ds, err := infer.ParseSession(data)
		clear(data)
		if err != nil {
			return fmt.Errorf("infer: the dealer's session: %w", err)
		}
		ds.Wipe()
		if ds.B != b {
			return fmt.Errorf("infer: received party %d's dealer session", ds.B)
		}
		info.DealerSessionNs = time.Since(t0).Nanoseconds()
	}
	conn := gates.NewConn(cfg.Peer)
	defer conn.Close()
	t0 = time.Now()
	if err := sess.Open(&gates.Party{B: b, Conn: conn}, mine); err != nil {
		return fmt.Errorf("infer: opening the weights: %w", err)
	}
	info.SessionOnlineNs = time.Since(t0).Nanoseconds()
	info.SessionBytes = conn.Sent()
	if cfg.Ready != nil {
		if err := cfg.Ready(info); err != nil {
			return err
		}
	}
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		rep := PartyImage{B: b, Index: i}
		if cfg.Dealer != nil {
			t0 = time.Now()
			nb, err := dealerNext(cfg.Dealer, b)
			if err != nil {
				return fmt.Errorf("infer: image %d, dealer key supply: %w", i, err)
			}
			rep.DealerNs, rep.DealerBytes = time.Since(t0).Nanoseconds(), nb
		}
		t0 = time.Now()
		mat, err := ps.Gen()
		if err != nil {
			return fmt.Errorf("infer: image %d, key supply through the daemon: %w", i, err)
		}
		rep.KeySupplyNs = time.Since(t0).Nanoseconds()
		var x []int64
		if b == 1 {
			x = cfg.Images[i]
		}
		sent, rounds := conn.Sent(), conn.Rounds()
		t0 = time.Now()
		out, err := infer.Eval(&gates.Party{B: b, Conn: conn}, mine, sess, mat, x)
		if err != nil {
			return fmt.Errorf("infer: image %d: %w", i, err)
		}
		rep.OnlineNs = time.Since(t0).Nanoseconds()
		rep.OnlineBytes, rep.Rounds = conn.Sent()-sent, conn.Rounds()-rounds
		rep.Logits = out
		if cfg.Report != nil {
			if err := cfg.Report(rep); err != nil {
				return err
			}
		}
	}
	if info.PrefetchWindow >= 2 {
		return overlapped(ctx, scancel, cfg, ps, sess, conn, mine, n, info.PrefetchWindow)
	}
	return nil
}

// overlapped is RunParty's overlapped pass: the same n evaluations, each
// one's material fetched (ps.Gen) while the previous ones are evaluated,
// at most window evaluations' material alive at once. Reports follow
// the first pass's (Index n …).
func overlapped(ctx context.Context, scancel context.CancelFunc, cfg PartyConfig, ps *infer.PartySupply, sess *infer.Session, conn *gates.Conn, mine *infer.Model, n, window int) error {
	pf := startPrefetch(ctx, n, window, func(int) (*infer.Material, error) { return ps.Gen() }, (*infer.Material).Wipe)
	defer func() {
		scancel() // a fetch under way ends (the stream is not used again)
		pf.stop()
	}()
	for i := 0; i < n; i++ {
		mat, gen, wait, err := pf.next(ctx)
		if err != nil {
			return fmt.Errorf("infer: image %d (overlapped), key supply through the daemon: %w", i, err)
		}
		rep := PartyImage{B: cfg.B, Index: n + i, Overlapped: true, KeySupplyNs: gen.Nanoseconds(), KeyWaitNs: wait.Nanoseconds()}
		var x []int64
		if cfg.B == 1 {
			x = cfg.Images[i]
		}
		sent, rounds := conn.Sent(), conn.Rounds()
		t0 := time.Now()
		out, err := infer.Eval(&gates.Party{B: cfg.B, Conn: conn}, mine, sess, mat, x)
		mat.Wipe() // Eval wipes it too, unless it refused it
		pf.release()
		if err != nil {
			return fmt.Errorf("infer: image %d (overlapped): %w", i, err)
		}
		rep.OnlineNs = time.Since(t0).Nanoseconds()
		rep.OnlineBytes, rep.Rounds = conn.Sent()-sent, conn.Rounds()-rounds
		rep.Logits = out
		if cfg.Report != nil {
			if err := cfg.Report(rep); err != nil {
				return err
			}
		}
	}
	return nil
}

// dealerNext asks the dealer for the next evaluation's material (one
// byte), receives and parses it, checks it is party b's and wipes it. It
// returns the bytes received, framing included.
func dealerNext(c net.Conn, b int) (int64, error) {
	if _, err := c.Write([]byte{1}); err != nil {
		return 0, err
	}
	data, err := ReadShipment(c)
	if err != nil {
		return 0, err
	}
	n := 8 + int64(len(data))
	mat, err := infer.ParseMaterial(data)
	clear(data)
	if err != nil {
		return 0, err
	}
	mat.Wipe()
	if mat.B != b {
		return 0, fmt.Errorf("received party %d's material", mat.B)
	}
	return n, nil
}

// RunDealer is the TRUSTED-DEALER BASELINE as a process of its own: it
// draws every weight mask, key and correlation of both parties for arch
// (gates.DealerSource, DealerCorr), ships party b its session over
// links[b], then for each of count evaluations waits for both parties'
// request byte and ships each its material over its own link, both links
// at once. The dealer sees every mask.
func RunDealer(ctx context.Context, arch *infer.Model, links [2]net.Conn, count int) error {
	sp, ss, err := infer.NewSupply(arch.Arch(), infer.Sources{Keys: &gates.DealerSource{}, Corr: &infer.DealerCorr{}})
	if err != nil {
		return err
	}
	var raw [2][]byte
	for b := 0; b < 2; b++ {
		raw[b], err = ss[b].MarshalBinary(arch.Ring)
		ss[b].Wipe()
		if err != nil {
			return fmt.Errorf("infer: dealer: %w", err)
		}
	}
	if err := shipBoth(links, raw, false); err != nil {
		return fmt.Errorf("infer: dealer: sessions: %w", err)
	}
	for i := 0; i < count; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := shipBoth(links, [2][]byte{}, true); err != nil {
			return fmt.Errorf("infer: dealer: image %d: waiting for the parties: %w", i, err)
		}
		mat, err := sp.Gen()
		if err != nil {
			return fmt.Errorf("infer: dealer: image %d: %w", i, err)
		}
		if raw, err = marshalBoth(mat, arch.Ring); err != nil {
			return fmt.Errorf("infer: dealer: image %d: %w", i, err)
		}
		if err := shipBoth(links, raw, false); err != nil {
			return fmt.Errorf("infer: dealer: image %d: %w", i, err)
		}
	}
	return nil
}

// shipBoth sends raw[b] over links[b] (wiping it), or with wait reads one
// request byte from each, both links at once.
func shipBoth(links [2]net.Conn, raw [2][]byte, wait bool) error {
	return both.Each(func(b int) error {
		if wait {
			var one [1]byte
			if _, err := links[b].Read(one[:]); err != nil {
				return fmt.Errorf("party %d: %w", b, err)
			}
			return nil
		}
		err := WriteShipment(links[b], raw[b])
		clear(raw[b])
		if err != nil {
			return fmt.Errorf("sending to party %d: %w", b, err)
		}
		return nil
	})
}
