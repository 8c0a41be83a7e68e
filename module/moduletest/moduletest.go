// Package moduletest sets up modules for the tests of module and of the
// packages above it (socket, service, client): software and durable
// modules, failing the test on any error, and a paired pair of them.
package moduletest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/store"
)

// Secret is a provisioning secret for tests.
var Secret = []byte("a provisioning secret of 32 byte")

// Software returns a software module of party, provisioned with secret,
// pairing with kem ("" for the default).
func Software(t testing.TB, party int, secret []byte, kem string) module.Device {
	t.Helper()
	d, err := module.NewSoftware(module.Config{Party: party, Secret: secret, KEM: kem})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// OpenDurable opens a durable module of party, provisioned with secret, on
// a bolt store at path that reserves window counters per commit (0: the
// store's default). The caller closes the store: tests that restart a
// module close it themselves.
func OpenDurable(t testing.TB, party int, path string, window uint64, secret []byte) (*module.Durable, *store.Bolt) {
	t.Helper()
	st, err := store.OpenBolt(path, window)
	if err != nil {
		t.Fatal(err)
	}
	d, err := module.OpenDurable(module.Config{Party: party, Secret: secret, Store: st})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	return d, st
}

// Pair pairs d0 (party 0) and d1 (party 1), failing t if they do not pair.
func Pair(t testing.TB, d0, d1 module.Device) {
	t.Helper()
	if err := module.Pair(context.Background(), d0, d1); err != nil {
		t.Fatal(err)
	}
}

// DurablePair opens two durable modules under Secret in a fresh temporary
// directory (m0.db, m1.db; window as in OpenDurable), pairs them, and
// closes their stores when t ends.
func DurablePair(t testing.TB, window uint64) [2]*module.Durable {
	t.Helper()
	dir := t.TempDir()
	var d [2]*module.Durable
	for b := range 2 {
		var st *store.Bolt
		d[b], st = OpenDurable(t, b, filepath.Join(dir, []string{"m0.db", "m1.db"}[b]), window, Secret)
		t.Cleanup(func() { st.Close() })
	}
	Pair(t, d[0], d[1])
	return d
}
