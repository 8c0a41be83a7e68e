package inferdemo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kord-fss/kord/gates"
	"github.com/kord-fss/kord/infer"
	"github.com/kord-fss/kord/internal/netshape"
)

// DemoConfig is one in-process demonstration run.
type DemoConfig struct {
	Model  *infer.Model
	Set    *infer.MNIST
	Start  int // the index of the first image of Set to run
	Images int // how many images, from Start
	// Dealer runs the online phase on the trusted-dealer baseline's
	// material (as the parties received it over their shaped links)
	// instead of the modules'. Both key supplies are measured either way.
	Dealer bool
	// Link shapes the online parties' connection and each of the dealer's
	// two links (netshape presets; the zero value is loopback, unshaped).
	Link netshape.Profile
	// Corr overrides the correlation source (nil: the module pair's
	// derived correlations, or the dealer with Dealer).
	Corr infer.CorrSource
	// Output, when set, gets each image's index in Set and the logits
	// the client (party 1) reconstructed, in order.
	Output func(index int, logits []int64) error
}

// InProcessAppLink is a report's app_link when the material came from
// modules in the application's own process.
const InProcessAppLink = "none: the modules run in this process"

// DemoReport is what `kord infer demo --json` prints.
type DemoReport struct {
	Model                       string  `json:"model"`
	Start                       int     `json:"start"`
	Images                      int     `json:"images"`
	Link                        string  `json:"link"`
	AppLink                     string  `json:"app_link"` // cluster.AppLinkName, or InProcessAppLink
	Source                      string  `json:"source"`
	BitExact                    int     `json:"bit_exact"`
	Mismatches                  int     `json:"mismatches"`
	Accuracy                    float64 `json:"accuracy"`
	RefAccuracy                 float64 `json:"ref_accuracy"`
	OnlineMsPerImage            float64 `json:"online_ms_per_image"`
	OnlineBytesPerPartyPerImage int64   `json:"online_bytes_per_party_per_image"`
	OnlineRounds                int64   `json:"online_rounds"`
	OfflineItemsPerImage        int     `json:"offline_items_per_image"`
	OfflineKeysPerImage         int     `json:"offline_keys_per_image"`
	OfflineDerivedKeysPerImage  int     `json:"offline_derived_keys_per_image"`
	OfflineCorrPerImage         int     `json:"offline_correlations_per_image"`
	OfflineCorrWordsPerImage    int     `json:"offline_correlation_words_per_image"`
	OfflineMsPerImage           float64 `json:"offline_ms_per_image"`
	// The session, once per run: weight masks drawn (offline) and the
	// weights opened as Ŵ = W + A in one round (online). Not in the
	// per-image figures.
	SessionOfflineMs       float64 `json:"session_offline_ms"`
	SessionOnlineMs        float64 `json:"session_online_ms"`
	SessionBytesPerParty   int64   `json:"session_online_bytes_per_party"`
	SessionWeightMaskWords int     `json:"session_weight_mask_words_per_party"`
	// OfflineBytesPerPartyPerImage is the material each party receives
	// from its own module per image: key shares (kord-v1 size), its mask
	// and payload shares (⌈ℓ/8⌉ bytes each) and its correlation words
	// (⌈ℓ/8⌉ bytes each). It never crosses between the sites.
	OfflineBytesPerPartyPerImage int64 `json:"offline_bytes_per_party_per_image"`
	// OfflineInterSiteBytesPerImage counts both directions of the link
	// between the two sites' hosts during key supply (0: every key and
	// correlation is derived); null for the in-process dealer, which has
	// no such link (its own links are the next stage's dealer process).
	OfflineInterSiteBytesPerImage *float64 `json:"offline_inter_site_bytes_per_image"`

	// Key supply, both ways, same workload, same run. KeySupply* is the
	// modules' (both modules of an in-process host.LocalPair generating
	// both parties' material, nothing between the sites); Dealer* is the
	// trusted dealer generating both parties' material and shipping each
	// party its own over that party's shaped link, both links at once,
	// until both parties have parsed it. A share is key supply ÷ (key
	// supply + online).
	KeySupplyMsPerImage         float64 `json:"key_supply_ms_per_image"`
	KeySupplyShare              float64 `json:"key_supply_share"`
	KeySupplyPath               string  `json:"key_supply_path"`
	DealerKeySupplyMsPerImage   float64 `json:"dealer_key_supply_ms_per_image"`
	DealerKeySupplyShare        float64 `json:"dealer_key_supply_share"`
	DealerBytesPerPartyPerImage int64   `json:"dealer_bytes_per_party_per_image"`
	DealerSessionMs             float64 `json:"dealer_session_ms"`
	DealerSessionBytesPerParty  int64   `json:"dealer_session_bytes_per_party"`
	DealerPath                  string  `json:"dealer_path"`
	// The overlapped pass (five processes, --prefetch-bytes of two
	// images' material or more): the same images again, each party
	// fetching the next images' material from its daemon while it
	// evaluates the current one, at most PrefetchWindow images' material
	// held at once (PrefetchBytes). OnlineKeyWaitMsPerImage is the time
	// the online parties waited for material there (the slower party per
	// image); KeySupplyMsPerImage stays the supply measured on its own,
	// in the first pass. All 0: no overlapped pass.
	OnlineKeyWaitMsPerImage    float64 `json:"online_key_wait_ms_per_image"`
	OverlapOnlineMsPerImage    float64 `json:"overlap_online_ms_per_image"`
	OverlapWallMsPerImage      float64 `json:"overlap_wall_ms_per_image"`
	OverlapKeySupplyMsPerImage float64 `json:"overlap_key_supply_ms_per_image"`
	PrefetchWindow             int     `json:"prefetch_window_images"`
	PrefetchBytes              int64   `json:"prefetch_bytes"`
}

// DefaultPrefetchBytes is the default memory bound of the material an
// online process fetches ahead (`kord infer demo --prefetch-bytes`).
const DefaultPrefetchBytes = 256 << 20

// KeySupplyPathInProcess and DealerPathInProcess describe where today's
// demo measures the two key supplies.
const (
	KeySupplyPathInProcess = "in process (--in-process): both modules of a paired host.LocalPair in this process, every key and correlation derived inside the modules, 0 bytes between the sites; the default run goes through the party daemons in five processes (cmd/kord/internal/inferdemo)"
	DealerPathInProcess    = "in process: the dealer and both receiving parties are goroutines; each party's material crosses its own shaped loopback TCP link (netshape), both links used at once"
)

// countingCorr counts the correlations and their words per party.
type countingCorr struct {
	src        infer.CorrSource
	mu         sync.Mutex
	n, words   int // input correlations
	wn, wwords int // weight masks
}

func (c *countingCorr) Weights(l *infer.Layer, in infer.Shape, ring int) (*infer.WeightMask, error) {
	w, err := c.src.Weights(l, in, ring)
	if err == nil {
		c.mu.Lock()
		c.wn++
		c.wwords += len(w.A[0])
		c.mu.Unlock()
	}
	return w, err
}

func (c *countingCorr) Input(w *infer.WeightMask, l *infer.Layer, in infer.Shape, ring int) ([2]*infer.LinearCorr, error) {
	r, err := c.src.Input(w, l, in, ring)
	if err == nil {
		c.mu.Lock()
		c.n++
		c.words += len(r[0].R) + len(r[0].Z)
		c.mu.Unlock()
	}
	return r, err
}

// Demo runs cfg.Images images of the set, from cfg.Start, through the
// two-party protocol, both parties in this process over a loopback TCP
// connection shaped by cfg.Link, in one session (weight masks drawn and
// the weights opened once). Before each image both key supplies run, one
// after the other: the module pair's (the material kord uses) and the
// trusted dealer's, which generates and ships each party its material over
// its own shaped link (DealerLink). The online phase runs on the modules'
// material (the dealer's with cfg.Dealer; the other is wiped unused) and
// every output is compared with the cleartext model. It stops at the
// first protocol error.
func Demo(ctx context.Context, cfg DemoConfig) (*DemoReport, error) {
	m := cfg.Model
	if m == nil || cfg.Set == nil || cfg.Images < 1 || cfg.Start < 0 || cfg.Start+cfg.Images > len(cfg.Set.Images) {
		return nil, errors.New("infer: demo needs a model, a set and a range of 1 or more of its images")
	}
	link := cfg.Link
	if link.Name == "" {
		link = netshape.Profile{Name: "loopback"}
	}
	rep := &DemoReport{Model: m.Name, Start: cfg.Start, Images: cfg.Images, Link: link.Name, AppLink: InProcessAppLink,
		KeySupplyPath: KeySupplyPathInProcess, DealerPath: DealerPathInProcess}
	ms, err := gates.NewModuleSource(ctx)
	if err != nil {
		return nil, err
	}
	defer ms.Close()
	var corr infer.CorrSource = &infer.ModuleCorr{Pair: ms.Pair, Ctx: ctx}
	if cfg.Corr != nil {
		corr = cfg.Corr
	}
	meter := &gates.Meter{Src: ms}
	cc := &countingCorr{src: corr}
	src := infer.Sources{Keys: meter, Corr: cc}
	rep.Source = "module pair (derived keys and derived correlations)"
	if cfg.Dealer {
		rep.Source = "trusted dealer (baseline), shipped over its two links"
	}
	a0, a1, err := netshape.TCPPair(link)
	if err != nil {
		return nil, err
	}
	c0, c1 := gates.NewConn(a0), gates.NewConn(a1)
	defer c0.Close()
	defer c1.Close()
	conns := [2]*gates.Conn{c0, c1}
	linkStart := ms.SentBytes()
	// The sessions: weight masks drawn by both supplies; the weights are
	// opened once, under the masks of the supply that runs online.
	t0 := time.Now()
	sp, msess, err := infer.NewSupply(m.Arch(), src)
	if err != nil {
		return nil, err
	}
	defer msess[0].Wipe()
	defer msess[1].Wipe()
	t1 := time.Now()
	dl, dsess, err := NewDealerLink(m.Arch(), link)
	if err != nil {
		return nil, err
	}
	defer dl.Close()
	defer dsess[0].Wipe()
	defer dsess[1].Wipe()
	t2 := time.Now()
	rep.DealerSessionMs = ms2(t2.Sub(t1))
	rep.DealerSessionBytesPerParty = max(dl.Sent()[0], dl.Sent()[1])
	dealerStart := dl.Sent()
	sess := msess
	rep.SessionOfflineMs = ms2(t1.Sub(t0))
	if cfg.Dealer {
		sess = dsess
		rep.SessionOfflineMs = rep.DealerSessionMs
	}
	if err := infer.OpenSessions(conns, m, sess); err != nil {
		return nil, err
	}
	rep.SessionOnlineMs = ms2(time.Since(t2))
	rep.SessionBytesPerParty = max(c0.Sent(), c1.Sent())
	rep.SessionWeightMaskWords = cc.wwords
	c0.ResetCounters()
	c1.ResetCounters()
	var online, modSupply, dealerSupply time.Duration
	correct, refCorrect := 0, 0
	for i := cfg.Start; i < cfg.Start+cfg.Images; i++ {
		x := infer.QuantizeImage(cfg.Set.Images[i], m.Frac)
		want, _, err := m.Ref(x)
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		mmat, err := sp.Gen()
		if err != nil {
			return nil, fmt.Errorf("image %d, module key supply: %w", i, err)
		}
		t1 := time.Now()
		dmat, err := dl.Next()
		if err != nil {
			mmat[0].Wipe()
			mmat[1].Wipe()
			return nil, fmt.Errorf("image %d, dealer key supply: %w", i, err)
		}
		t2 := time.Now()
		mat, unused := mmat, dmat
		if cfg.Dealer {
			mat, unused = dmat, mmat
		}
		unused[0].Wipe()
		unused[1].Wipe()
		got, err := infer.Online(conns, m, sess, mat, x)
		if err != nil {
			return nil, fmt.Errorf("image %d: %w", i, err)
		}
		modSupply += t1.Sub(t0)
		dealerSupply += t2.Sub(t1)
		online += time.Since(t2)
		if cfg.Output != nil {
			if err := cfg.Output(i, got); err != nil {
				return nil, err
			}
		}
		if slices.Equal(got, want) {
			rep.BitExact++
		} else {
			rep.Mismatches++
		}
		if infer.Argmax(got) == cfg.Set.Labels[i] {
			correct++
		}
		if infer.Argmax(want) == cfg.Set.Labels[i] {
			refCorrect++
		}
	}
	n := cfg.Images
	perImage := func(d time.Duration) float64 { return ms2(d) / float64(n) }
	rep.Accuracy = float64(correct) / float64(n)
	rep.RefAccuracy = float64(refCorrect) / float64(n)
	rep.OnlineMsPerImage = perImage(online)
	rep.KeySupplyMsPerImage = perImage(modSupply)
	rep.DealerKeySupplyMsPerImage = perImage(dealerSupply)
	if modSupply+online > 0 {
		rep.KeySupplyShare = float64(modSupply) / float64(modSupply+online)
	}
	if dealerSupply+online > 0 {
		rep.DealerKeySupplyShare = float64(dealerSupply) / float64(dealerSupply+online)
	}
	rep.OfflineMsPerImage = rep.KeySupplyMsPerImage
	if cfg.Dealer {
		rep.OfflineMsPerImage = rep.DealerKeySupplyMsPerImage
	}
	dend := dl.Sent()
	rep.DealerBytesPerPartyPerImage = max(dend[0]-dealerStart[0], dend[1]-dealerStart[1]) / int64(n)
	rep.OnlineBytesPerPartyPerImage = max(c0.Sent(), c1.Sent()) / int64(n)
	rep.OnlineRounds = c0.Rounds() / int64(n)
	uses := meter.Uses()
	for _, u := range uses {
		if u.Derived {
			rep.OfflineDerivedKeysPerImage++
		}
	}
	rep.OfflineDerivedKeysPerImage /= n
	rep.OfflineKeysPerImage = len(uses) / n
	rep.OfflineCorrPerImage = cc.n / n
	rep.OfflineCorrWordsPerImage = cc.words / n
	rep.OfflineItemsPerImage = rep.OfflineKeysPerImage + rep.OfflineCorrPerImage
	var material int64
	for _, u := range uses {
		material += int64(u.Params.KeySize() + (u.Params.InBits+7)/8 + (u.Params.OutBits+7)/8)
	}
	material += int64(cc.words) * int64((m.Ring+7)/8)
	rep.OfflineBytesPerPartyPerImage = material / int64(n)
	end := ms.SentBytes()
	v := float64(end[0]-linkStart[0]+end[1]-linkStart[1]) / float64(n)
	rep.OfflineInterSiteBytesPerImage = &v
	return rep, nil
}

func ms2(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
