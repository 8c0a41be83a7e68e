package infer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kord-fss/kord/gates"
)

// DemoConfig is one in-process demonstration run.
type DemoConfig struct {
	Model  *Model
	Set    *MNIST
	Start  int  // the index of the first image of Set to run
	Images int  // how many images, from Start
	Dealer bool // every key and correlation from the trusted-dealer baseline
	// Corr overrides the correlation source (nil: the module pair's
	// derived correlations, or the dealer with Dealer).
	Corr CorrSource
}

// DemoReport is what `kord infer demo --json` prints.
type DemoReport struct {
	Model                       string  `json:"model"`
	Start                       int     `json:"start"`
	Images                      int     `json:"images"`
	Link                        string  `json:"link"`
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
}

// countingCorr counts the correlations and their words per party.
type countingCorr struct {
	src        CorrSource
	mu         sync.Mutex
	n, words   int // input correlations
	wn, wwords int // weight masks
}

func (c *countingCorr) Weights(l *Layer, in Shape, ring int) (*WeightMask, error) {
	w, err := c.src.Weights(l, in, ring)
	if err == nil {
		c.mu.Lock()
		c.wn++
		c.wwords += len(w.A[0])
		c.mu.Unlock()
	}
	return w, err
}

func (c *countingCorr) Input(w *WeightMask, l *Layer, in Shape, ring int) ([2]*LinearCorr, error) {
	r, err := c.src.Input(w, l, in, ring)
	if err == nil {
		c.mu.Lock()
		c.n++
		c.words += len(r[0].R) + len(r[0].Z)
		c.mu.Unlock()
	}
	return r, err
}

// Demo runs the first cfg.Images images of the set through the two-party
// protocol, both parties in this process over loopback TCP, in one
// session (weight masks drawn and the weights opened once), each image
// with fresh material generated just before it, and compares every
// output with the cleartext model. It stops at the first protocol error.
func Demo(ctx context.Context, cfg DemoConfig) (*DemoReport, error) {
	m := cfg.Model
	if m == nil || cfg.Set == nil || cfg.Images < 1 || cfg.Start < 0 || cfg.Start+cfg.Images > len(cfg.Set.Images) {
		return nil, errors.New("infer: demo needs a model, a set and a range of 1 or more of its images")
	}
	rep := &DemoReport{Model: m.Name, Start: cfg.Start, Images: cfg.Images, Link: "loopback"}
	var keys gates.KeySource
	var corr CorrSource
	var ms *gates.ModuleSource
	if cfg.Dealer {
		keys, corr = &gates.DealerSource{}, &DealerCorr{}
		rep.Source = "trusted dealer (baseline)"
	} else {
		var err error
		ms, err = gates.NewModuleSource(ctx)
		if err != nil {
			return nil, err
		}
		defer ms.Close()
		keys = ms
		corr = &ModuleCorr{Pair: ms.Pair, Ctx: ctx}
		rep.Source = "module pair (derived keys and derived correlations)"
	}
	if cfg.Corr != nil {
		corr = cfg.Corr
	}
	meter := &gates.Meter{Src: keys}
	cc := &countingCorr{src: corr}
	src := Sources{Keys: meter, Corr: cc}
	c0, c1, err := gates.TCPPair()
	if err != nil {
		return nil, err
	}
	defer c0.Close()
	defer c1.Close()
	conns := [2]*gates.Conn{c0, c1}
	var online, offline time.Duration
	var linkStart [2]uint64
	if ms != nil {
		linkStart = ms.SentBytes()
	}
	// The session: weight masks drawn and the weights opened once.
	t0 := time.Now()
	sp, sess, err := NewSupply(m.Arch(), src)
	if err != nil {
		return nil, err
	}
	defer sess[0].Wipe()
	defer sess[1].Wipe()
	t1 := time.Now()
	if err := OpenSessions(conns, m, sess); err != nil {
		return nil, err
	}
	rep.SessionOfflineMs = float64(t1.Sub(t0).Microseconds()) / 1000
	rep.SessionOnlineMs = float64(time.Since(t1).Microseconds()) / 1000
	rep.SessionBytesPerParty = max(c0.Sent(), c1.Sent())
	rep.SessionWeightMaskWords = cc.wwords
	c0.ResetCounters()
	c1.ResetCounters()
	correct, refCorrect := 0, 0
	for i := cfg.Start; i < cfg.Start+cfg.Images; i++ {
		x := QuantizeImage(cfg.Set.Images[i], m.Frac)
		want, _, err := m.Ref(x)
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		mat, err := sp.Gen()
		if err != nil {
			return nil, fmt.Errorf("image %d: %w", i, err)
		}
		t1 := time.Now()
		got, err := Online(conns, m, sess, mat, x)
		if err != nil {
			return nil, fmt.Errorf("image %d: %w", i, err)
		}
		offline += t1.Sub(t0)
		online += time.Since(t1)
		same := len(got) == len(want)
		for j := 0; same && j < len(want); j++ {
			same = got[j] == want[j]
		}
		if same {
			rep.BitExact++
		} else {
			rep.Mismatches++
		}
		if Argmax(got) == cfg.Set.Labels[i] {
			correct++
		}
		if Argmax(want) == cfg.Set.Labels[i] {
			refCorrect++
		}
	}
	n := cfg.Images
	rep.Accuracy = float64(correct) / float64(n)
	rep.RefAccuracy = float64(refCorrect) / float64(n)
	rep.OnlineMsPerImage = float64(online.Microseconds()) / 1000 / float64(n)
	rep.OfflineMsPerImage = float64(offline.Microseconds()) / 1000 / float64(n)
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
	if ms != nil {
		end := ms.SentBytes()
		v := float64(end[0]-linkStart[0]+end[1]-linkStart[1]) / float64(n)
		rep.OfflineInterSiteBytesPerImage = &v
	}
	return rep, nil
}
