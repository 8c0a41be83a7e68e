package inferdemo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/gates"
	"github.com/kord-fss/kord/infer"
	"github.com/kord-fss/kord/internal/netshape"
)

// ResNetDemoConfig is one run of `kord infer demo --model resnet18…`.
type ResNetDemoConfig struct {
	Model  *infer.Model // with weights (ResNetModel or a model file)
	Images int          // images ResNetImage(Model, ResNetSeed+Start+i), i < Images
	Start  int          // the first image's index
	// Output, when set, gets each image's index (Start+i) and the logits
	// the client (party 1) reconstructed, in order.
	Output func(index int, logits []int64) error
	Stream infer.StreamConfig
	// Link shapes the online parties' loopback connection (the zero
	// Profile: unshaped); it sets Stream.Pair.
	Link netshape.Profile
	// NoDealer skips the trusted-dealer baseline's key supply (it
	// regenerates the whole inventory once more per image).
	NoDealer bool
	// CompareOverlap runs every image twice in the same run, supply and
	// online alternating (the reported split) and then overlapped, and
	// reports both wall times.
	CompareOverlap bool
	// Log, when set, gets a line per phase (the progress lines go to
	// Stream.Progress).
	Log io.Writer
	// Daemons, when both are set, are clients of the two sites' paired
	// party daemons: every key and correlation of every step is asked of
	// both (DaemonSource, request ids from FirstID) and nothing is
	// generated in this process. Otherwise both modules run in this
	// process (gates.NewModuleSource).
	Daemons [2]*client.Client
	FirstID uint64
	// PerRequest is DaemonSource.PerRequest (0: DefaultDaemonPerRequest).
	PerRequest int
	// AppLink is Config.AppLink, for the daemons ResNet starts.
	AppLink string
	// InterSite, with Daemons, reads the bytes that have crossed between
	// the sites so far (a counting proxy on the daemons' peer link).
	InterSite func() int64
}

// ResNetDemoReport carries the MNIST demo's JSON fields (DemoReport) for
// a ResNet run, plus the streamed run's own figures. The images are
// seeded, not labelled: accuracy is the fraction of images whose secure
// top-1 class equals the cleartext model's.
type ResNetDemoReport struct {
	Model string `json:"model"`
	// Start is the first image's index: the images are
	// ResNetImage(Model, ResNetSeed+Start+i).
	Start      int     `json:"start"`
	Images     int     `json:"images"`
	Link       string  `json:"link"`
	AppLink    string  `json:"app_link"` // cluster.AppLinkName with the daemons, else InProcessAppLink
	Source     string  `json:"source"`
	BitExact   int     `json:"bit_exact"`
	Mismatches int     `json:"mismatches"`
	Accuracy   float64 `json:"accuracy"`
	// RefAccuracy is 1: the seeded images have no labels; the cleartext
	// model's top-1 class is the reference Accuracy is taken against.
	RefAccuracy                 float64 `json:"ref_accuracy"`
	OnlineMsPerImage            float64 `json:"online_ms_per_image"`
	OnlineBytesPerPartyPerImage int64   `json:"online_bytes_per_party_per_image"`
	OnlineRounds                int64   `json:"online_rounds"`
	OfflineItemsPerImage        int     `json:"offline_items_per_image"`
	OfflineKeysPerImage         int     `json:"offline_keys_per_image"`
	OfflineDerivedKeysPerImage  int     `json:"offline_derived_keys_per_image"` // all of them
	// OfflineMsPerImage is KeySupplyMsPerImage (as in the MNIST demo).
	OfflineMsPerImage            float64 `json:"offline_ms_per_image"`
	OfflineCorrPerImage          int     `json:"offline_correlations_per_image"`
	OfflineCorrWordsPerImage     int     `json:"offline_correlation_words_per_image"`
	OfflineBytesPerPartyPerImage int64   `json:"offline_bytes_per_party_per_image"`
	// Through the daemons: the bytes on the sites' peer link (InterSite),
	// the batch headers only, every key and correlation being derived. In
	// process: what the pair's modules sent each other (0 beyond
	// pairing). With CompareOverlap both runs of each image count, as in
	// DaemonRequestsPerImage.
	OfflineInterSiteBytesPerImage float64 `json:"offline_inter_site_bytes_per_image"`
	KeySupplyMsPerImage           float64 `json:"key_supply_ms_per_image"`
	KeySupplyShare                float64 `json:"key_supply_share"`
	KeySupplyPath                 string  `json:"key_supply_path"`
	DealerKeySupplyMsPerImage     float64 `json:"dealer_key_supply_ms_per_image"`
	DealerKeySupplyShare          float64 `json:"dealer_key_supply_share"`
	DealerBytesPerPartyPerImage   int64   `json:"dealer_bytes_per_party_per_image"`
	DealerPath                    string  `json:"dealer_path"`
	SessionOfflineMs              float64 `json:"session_offline_ms"`
	SessionOnlineMs               float64 `json:"session_online_ms"`
	SessionBytesPerParty          int64   `json:"session_online_bytes_per_party"`
	SessionWeightMaskWords        int     `json:"session_weight_mask_words_per_party"`
	// The trusted dealer's session: drawing the weight masks (part of
	// DealerKeySupplyMsPerImage, which predates it: the dealer draws a
	// session per image), and what it would ship each party of them.
	DealerSessionMs            float64 `json:"dealer_session_ms"`
	DealerSessionBytesPerParty int64   `json:"dealer_session_bytes_per_party"`
	WallMsPerImage             float64 `json:"wall_ms_per_image"`
	RefMsPerImage              float64 `json:"cleartext_ms_per_image"`
	Overflow                   int     `json:"overflow_values"`
	MaxAbsWire                 int64   `json:"max_abs_wire"`
	Overlap                    bool    `json:"overlap"`
	Chunk                      int     `json:"chunk"`
	Steps                      int     `json:"steps"`
	PeakRSSBytes               int64   `json:"peak_rss_bytes"`
	// PeakRSSByProcess: each process's peak resident set, "client" for
	// this one (both online parties; the modules too when in process),
	// module0, module1, party0 and party1 for the daemons (filled by the
	// caller that started them).
	PeakRSSByProcess map[string]int64 `json:"peak_rss_bytes_by_process"`
	// DaemonRequestsPerImage: the requests sent to each site per image
	// (with Daemons).
	DaemonRequestsPerImage int64          `json:"daemon_requests_per_image,omitempty"`
	MaxStepMaterialBytes   int64          `json:"max_step_material_bytes_per_party"`
	Keys                   map[string]int `json:"keys"`
	// With CompareOverlap: the same images overlapped, same run.
	OverlapWallMsPerImage float64 `json:"overlap_wall_ms_per_image"`
	OverlapSpeedup        float64 `json:"overlap_speedup,omitempty"` // sequential wall / overlapped wall
	// OnlineKeyWaitMsPerImage: with Overlap or CompareOverlap, the time
	// the online parties waited for material in the overlapped run;
	// AheadSteps the steps the supplier could hold ready there
	// (StreamConfig.PrefetchBytes).
	OnlineKeyWaitMsPerImage float64 `json:"online_key_wait_ms_per_image"`
	AheadSteps              int     `json:"ahead_steps,omitempty"`
	// The overlapped run's online time (its wall less the waits) and its
	// supply's own time, alongside; the MNIST demo's prefetch fields
	// (PrefetchWindow 0: a ResNet prefetches steps, AheadSteps).
	OverlapOnlineMsPerImage    float64 `json:"overlap_online_ms_per_image"`
	OverlapKeySupplyMsPerImage float64 `json:"overlap_key_supply_ms_per_image"`
	PrefetchWindow             int     `json:"prefetch_window_images"`
	PrefetchBytes              int64   `json:"prefetch_bytes"`
}

// Paths of the ResNet demo's two key supplies.
const (
	// ResNetDaemonSupplyPath takes the keys per request.
	ResNetDaemonSupplyPath = "party daemons: this process runs both online parties and asks each site's party daemon (kord party, in front of its own kord module) for every step's keys and correlations as the step comes, the same requests (same ids, at most %d keys each) to both sites at once, each party taking its own site's half; every key and correlation derived inside the paired modules, only batch headers between the sites"
	ResNetSupplyPath       = "in process: both modules of a paired host.LocalPair in this process, streamed step by step, every key and correlation derived inside the modules"
	ResNetDealerPath       = "in process: the trusted dealer (BatchDealer: fss.BatchGen on every core; DealerCorr) generating the same steps in this process, nothing shipped (dealer_bytes_per_party_per_image is what it would ship to each party)"
)

// ResNetDemo runs cfg.Images seeded images through RunStream with module
// keys — from the party daemons (cfg.Daemons, one DaemonSource for the
// whole run) or from a module pair in this process —, each image in a
// session of its own, checks every output against Model.Ref, and (unless
// NoDealer) times the trusted dealer's supply of the same material.
func ResNetDemo(ctx context.Context, cfg ResNetDemoConfig) (*ResNetDemoReport, error) {
	m := cfg.Model
	if m == nil || cfg.Images < 1 {
		return nil, errors.New("infer: resnet demo needs a model and 1 or more images")
	}
	logf := func(format string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", a...)
		}
	}
	link := cfg.Link.Name
	if link == "" {
		link = "loopback"
	}
	shape := cfg.Link
	cfg.Stream.Pair = func() (net.Conn, net.Conn, error) { return netshape.TCPPair(shape) }
	rep := &ResNetDemoReport{Model: m.Name, Start: cfg.Start, Images: cfg.Images, Link: link,
		Source:        "module pair (derived keys and derived correlations), streamed",
		KeySupplyPath: ResNetSupplyPath, DealerPath: ResNetDealerPath, Overlap: cfg.Stream.Overlap}
	var src infer.Sources
	var interSite func() int64
	var ds *infer.DaemonSource
	if cfg.Daemons[0] != nil || cfg.Daemons[1] != nil {
		var err error
		if ds, err = infer.NewDaemonSource(ctx, cfg.Daemons, cfg.FirstID); err != nil {
			return nil, err
		}
		defer ds.Close()
		ds.PerRequest = cfg.PerRequest
		src = infer.Sources{Keys: ds, Corr: ds}
		interSite = cfg.InterSite
		rep.Source = "party daemons (derived keys and derived correlations), streamed"
		rep.KeySupplyPath = fmt.Sprintf(ResNetDaemonSupplyPath, ds.KeysPerRequest())
	} else {
		ms, err := gates.NewModuleSource(ctx)
		if err != nil {
			return nil, err
		}
		defer ms.Close()
		src = infer.Sources{Keys: ms, Corr: &infer.ModuleCorr{Pair: ms.Pair, Ctx: ctx}}
		interSite = func() int64 { s := ms.SentBytes(); return int64(s[0] + s[1]) }
	}
	if interSite == nil {
		interSite = func() int64 { return 0 }
	}
	linkStart := interSite()
	var online, supply, dealer, dealerSession, wall, owall, ref, wait, osupply time.Duration
	for i := 0; i < cfg.Images; i++ {
		x := infer.ResNetImage(m, infer.ResNetSeed+uint64(cfg.Start+i))
		t0 := time.Now()
		want, st, err := m.Ref(x)
		if err != nil {
			return nil, err
		}
		ref += time.Since(t0)
		rep.Overflow += st.Overflow
		rep.MaxAbsWire = max(rep.MaxAbsWire, st.MaxAbs)
		logf("image %d: cleartext reference %.1f s, max |wire| %d, %d overflows", i, time.Since(t0).Seconds(), st.MaxAbs, st.Overflow)
		got, sr, err := infer.RunStream(ctx, m, x, src, cfg.Stream)
		if err != nil {
			return nil, fmt.Errorf("image %d: %w", i, err)
		}
		logf("image %d: key supply %.1f s, online %.1f s, wall %.1f s; session %.1f s offline, %.1f s online",
			i, sr.SupplyMs/1000, sr.OnlineMs/1000, sr.WallMs/1000, sr.SessionOfflineMs/1000, sr.SessionOnlineMs/1000)
		online += time.Duration(sr.OnlineMs * 1e6)
		supply += time.Duration(sr.SupplyMs * 1e6)
		wall += time.Duration(sr.WallMs * 1e6)
		if cfg.Stream.Overlap { // this run is the overlapped one
			wait += time.Duration(sr.KeyWaitMs * 1e6)
			owall += time.Duration(sr.WallMs * 1e6)
			osupply += time.Duration(sr.SupplyMs * 1e6)
			rep.AheadSteps = sr.Ahead
		}
		same := slices.Equal(got, want)
		if cfg.CompareOverlap {
			sc := cfg.Stream
			sc.Overlap = true
			got2, sr2, err := infer.RunStream(ctx, m, x, src, sc)
			if err != nil {
				return nil, fmt.Errorf("image %d, overlapped: %w", i, err)
			}
			logf("image %d: overlapped, wall %.1f s (supply %.1f s running alongside)", i, sr2.WallMs/1000, sr2.SupplyMs/1000)
			owall += time.Duration(sr2.WallMs * 1e6)
			wait += time.Duration(sr2.KeyWaitMs * 1e6)
			osupply += time.Duration(sr2.SupplyMs * 1e6)
			rep.AheadSteps = sr2.Ahead
			same = same && slices.Equal(got2, want)
		}
		if cfg.Output != nil {
			if err := cfg.Output(cfg.Start+i, got); err != nil {
				return nil, err
			}
		}
		if same {
			rep.BitExact++
		} else {
			rep.Mismatches++
		}
		if len(got) > 0 && infer.Argmax(got) == infer.Argmax(want) {
			rep.Accuracy++
		}
		rep.OnlineBytesPerPartyPerImage += sr.OnlineBytes
		rep.OnlineRounds = sr.OnlineRounds
		rep.OfflineKeysPerImage = sr.KeysTotal
		rep.OfflineCorrPerImage = sr.Correlations
		rep.OfflineCorrWordsPerImage = sr.CorrWords
		rep.SessionOfflineMs += sr.SessionOfflineMs
		rep.SessionOnlineMs += sr.SessionOnlineMs
		rep.SessionBytesPerParty = sr.SessionBytes
		rep.SessionWeightMaskWords = sr.WeightMaskWords
		rep.Chunk, rep.Steps, rep.Keys = sr.Chunk, sr.Steps, sr.Keys
		rep.MaxStepMaterialBytes = max(rep.MaxStepMaterialBytes, sr.MaterialStepBytes)
		if !cfg.NoDealer {
			t1 := time.Now()
			b, ds, err := infer.SupplyOnlyTimed(m, infer.Sources{Keys: &infer.BatchDealer{}, Corr: &infer.DealerCorr{}}, cfg.Stream.Chunk)
			if err != nil {
				return nil, fmt.Errorf("image %d, dealer: %w", i, err)
			}
			dealer += time.Since(t1)
			dealerSession += ds
			rep.DealerBytesPerPartyPerImage = b
			logf("image %d: trusted dealer's supply %.1f s", i, time.Since(t1).Seconds())
		}
	}
	n := float64(cfg.Images)
	per := func(d time.Duration) float64 { return ms2(d) / n }
	rep.Accuracy /= n
	rep.OnlineMsPerImage, rep.KeySupplyMsPerImage, rep.WallMsPerImage, rep.RefMsPerImage = per(online), per(supply), per(wall), per(ref)
	rep.DealerKeySupplyMsPerImage = per(dealer)
	rep.OnlineKeyWaitMsPerImage = per(wait)
	rep.DealerSessionMs = per(dealerSession)
	if dealer > 0 {
		rep.DealerSessionBytesPerParty = int64(rep.SessionWeightMaskWords) * int64((m.Ring+7)/8)
	}
	rep.OfflineMsPerImage = rep.KeySupplyMsPerImage
	rep.OfflineDerivedKeysPerImage = rep.OfflineKeysPerImage
	rep.RefAccuracy = 1
	rep.PrefetchBytes = cfg.Stream.PrefetchBytes
	if owall > 0 {
		rep.OverlapWallMsPerImage = per(owall)
		rep.OverlapOnlineMsPerImage = per(owall - wait)
		rep.OverlapKeySupplyMsPerImage = per(osupply)
	}
	if owall > 0 && cfg.CompareOverlap {
		rep.OverlapSpeedup = float64(wall) / float64(owall)
	}
	rep.OnlineBytesPerPartyPerImage /= int64(cfg.Images)
	rep.OfflineItemsPerImage = rep.OfflineKeysPerImage + rep.OfflineCorrPerImage
	if supply+online > 0 {
		rep.KeySupplyShare = float64(supply) / float64(supply+online)
	}
	if dealer > 0 {
		rep.DealerKeySupplyShare = float64(dealer) / float64(dealer+online)
	}
	rep.OfflineInterSiteBytesPerImage = float64(interSite()-linkStart) / n
	if ds != nil {
		r, _, _ := ds.Counts()
		rep.DaemonRequestsPerImage = r / int64(cfg.Images)
	}
	inv, err := m.KeyInventory(cfg.Stream.Chunk)
	if err != nil {
		return nil, err
	}
	rep.OfflineBytesPerPartyPerImage = inv.MaterialBytes
	rep.PeakRSSBytes = infer.PeakRSS()
	rep.PeakRSSByProcess = map[string]int64{"client": rep.PeakRSSBytes}
	return rep, nil
}
