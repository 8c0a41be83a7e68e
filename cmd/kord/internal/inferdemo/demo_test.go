package inferdemo

import (
	"context"
	"sync"
	"testing"

	"github.com/kord-fss/kord/infer"
	"github.com/kord-fss/kord/internal/netshape"
)

var (
	mnistOnce sync.Once
	mnistTest *infer.MNIST
	mnistErr  error
)

func testSet(t testing.TB) *infer.MNIST {
	t.Helper()
	mnistOnce.Do(func() { _, mnistTest, mnistErr = infer.LoadMNIST() })
	if mnistErr != nil {
		t.Fatal(mnistErr)
	}
	return mnistTest
}

// testModel is a committed model (infer/testdata, embedded by infer).
func testModel(t testing.TB, name string) *infer.Model {
	t.Helper()
	m, err := infer.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMNISTEndToEnd runs the first test images through both committed
// models with every key and correlation from a paired module pair, and
// requires every logit to equal the cleartext fixed-point model's and the
// predicted class to match it; every key is derived and nothing crosses
// the link between the two sites' hosts.
func TestMNISTEndToEnd(t *testing.T) {
	set := testSet(t)
	images := 3
	if testing.Short() {
		images = 1
	}
	for _, name := range []string{"mlp", "cnn"} {
		t.Run(name, func(t *testing.T) {
			m := testModel(t, name)
			rep, err := Demo(context.Background(), DemoConfig{Model: m, Set: set, Images: images})
			if err != nil {
				t.Fatal(err)
			}
			if rep.BitExact != images || rep.Mismatches != 0 {
				t.Fatalf("%d bit-exact, %d mismatches of %d", rep.BitExact, rep.Mismatches, images)
			}
			if rep.Accuracy != rep.RefAccuracy {
				t.Fatalf("secure accuracy %v differs from the cleartext model's %v", rep.Accuracy, rep.RefAccuracy)
			}
			if rep.OfflineCorrPerImage == 0 || rep.OfflineDerivedKeysPerImage != rep.OfflineKeysPerImage {
				t.Fatalf("want correlations and every key derived: %+v", rep)
			}
			if rep.OfflineInterSiteBytesPerImage == nil || *rep.OfflineInterSiteBytesPerImage != 0 {
				t.Fatalf("bytes crossed between the sites, want 0: %v", rep.OfflineInterSiteBytesPerImage)
			}
		})
	}
}

// TestInventoryMatchesRun: the per-layer cost formulas add up to exactly
// the keys, correlation words, rounds and bytes a run of each committed
// model measures (per image and for the session).
func TestInventoryMatchesRun(t *testing.T) {
	set := testSet(t)
	for _, name := range []string{"mlp", "cnn"} {
		m := testModel(t, name)
		inv, err := m.Inventory()
		if err != nil {
			t.Fatal(err)
		}
		var keys, words, sessWords, rounds, bytes, sessBytes int
		for _, c := range inv {
			keys += c.Keys
			words += c.CorrWords
			sessWords += c.SessionWords
			rounds += c.Rounds
			bytes += c.Bytes
			sessBytes += c.SessionBytes
		}
		rep, err := Demo(context.Background(), DemoConfig{Model: m, Set: set, Images: 1, Dealer: true})
		if err != nil {
			t.Fatal(err)
		}
		got := [6]int64{int64(rep.OfflineKeysPerImage), int64(rep.OfflineCorrWordsPerImage), int64(rep.SessionWeightMaskWords),
			rep.OnlineRounds, rep.OnlineBytesPerPartyPerImage, rep.SessionBytesPerParty}
		want := [6]int64{int64(keys), int64(words), int64(sessWords), int64(rounds), int64(bytes), int64(sessBytes + 4)}
		if got != want {
			t.Fatalf("%s: measured keys, words, session words, rounds, bytes, session bytes = %v; inventory %v", name, got, want)
		}
	}
}

// TestDemoShapedLink: a short run on the 1gbps preset reports both key
// supplies; the dealer shipped bytes and took time, the modules shipped
// nothing between the sites. No wall-clock thresholds.
func TestDemoShapedLink(t *testing.T) {
	set := testSet(t)
	m := testModel(t, "mlp")
	p, err := netshape.Preset("1gbps")
	if err != nil {
		t.Fatal(err)
	}
	for _, dealer := range []bool{false, true} {
		rep, err := Demo(context.Background(), DemoConfig{Model: m, Set: set, Images: 1, Link: p, Dealer: dealer})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Link != "1gbps" || rep.BitExact != 1 || rep.Mismatches != 0 {
			t.Fatalf("dealer=%v: %+v", dealer, rep)
		}
		if rep.DealerBytesPerPartyPerImage < rep.OfflineBytesPerPartyPerImage/2 || rep.DealerKeySupplyMsPerImage <= 0 ||
			rep.DealerKeySupplyShare <= 0 || rep.KeySupplyMsPerImage <= 0 || rep.KeySupplyShare <= 0 {
			t.Fatalf("dealer=%v: key supply fields: %+v", dealer, rep)
		}
		if *rep.OfflineInterSiteBytesPerImage != 0 {
			t.Fatalf("inter-site bytes %v, want 0", *rep.OfflineInterSiteBytesPerImage)
		}
	}
}
