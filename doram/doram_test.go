package doram

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kord-fss/kord/host"
)

func share(rng *rand.Rand, v uint64) [2]uint64 {
	r := rng.Uint64()
	return [2]uint64{r, v - r}
}

// exercise runs random reads and writes against a plain model.
func exercise(t *testing.T, src KeySource, d, ops int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(21, uint64(d)))
	rom := make([]uint64, 1<<uint(d))
	for i := range rom {
		rom[i] = rng.Uint64()
	}
	model := append([]uint64(nil), rom...)
	o, err := New(d, rom, ops, src)
	if err != nil {
		t.Fatal(err)
	}
	var consumed uint64 // 1 + stash entries per access
	for op := 0; op < ops; op++ {
		consumed += uint64(1 + o.StashLen())
		i := rng.Uint64() & mask(d)
		if op%3 == 2 { // revisit a recent address
			i = uint64(op*7) & mask(d)
		}
		// Index shares mod 2^d: the share sum wraps mod 2^d.
		idx := share(rng, i)
		if rng.IntN(2) == 0 {
			v := rng.Uint64()
			old, err := o.Write(ctx, idx, share(rng, v))
			if err != nil {
				t.Fatal(err)
			}
			if old[0]+old[1] != model[i] {
				t.Fatalf("op %d: write returned old %d, want %d", op, old[0]+old[1], model[i])
			}
			model[i] = v
		} else {
			got, err := o.Read(ctx, idx)
			if err != nil {
				t.Fatal(err)
			}
			if got[0]+got[1] != model[i] {
				t.Fatalf("op %d: read %d at %d, want %d", op, got[0]+got[1], i, model[i])
			}
		}
	}
	if o.Consumed() != consumed || o.StashLen() == 0 {
		t.Fatalf("consumed %d key pairs with %d writes in the stash, want %d", o.Consumed(), o.StashLen(), consumed)
	}
}

func TestDealerSource(t *testing.T) { exercise(t, DealerSource{}, 7, 40) }

func TestModuleSource(t *testing.T) {
	lp, err := host.NewLocalPair(context.Background(), host.LocalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close()
	exercise(t, ModuleSource{Pair: lp}, 6, 25)
}

func TestStashFull(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	o, err := New(4, make([]uint64, 16), 2, DealerSource{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, err := o.Write(ctx, share(rng, 3), share(rng, 9)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := o.Write(ctx, share(rng, 3), share(rng, 9)); !errors.Is(err, ErrStashFull) {
		t.Fatalf("got %v, want ErrStashFull", err)
	}
	if o.KeysPerAccess() != 3 {
		t.Fatalf("keys per access %d, want 3", o.KeysPerAccess())
	}
}

func TestBadArguments(t *testing.T) {
	if _, err := New(0, nil, 0, DealerSource{}); err == nil {
		t.Error("d = 0 accepted")
	}
	if _, err := New(4, make([]uint64, 15), 0, DealerSource{}); err == nil {
		t.Error("short ROM accepted")
	}
}

func TestMeasure(t *testing.T) {
	r, err := Measure(context.Background(), 8, 4, DealerSource{}, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.KeysPerAccess != 5 || r.SuppliedPerSec <= 0 || r.ConsumedPerSec <= 0 {
		t.Fatalf("bad rates %+v", r)
	}
}
