package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
)

// TestPartyProbes: real party processes answer /healthz and /readyz on
// their --metrics address: ready once paired with a peer session, and not
// ready (503, naming the module) while party 0's module is killed, ready
// again once it is back.
func TestPartyProbes(t *testing.T) {
	ctx, c := startCluster(t, t.TempDir(), cluster.Options{Batch: 16, PeerPlaintext: true})
	probe := func(b int, path string) (int, map[string]any) {
		resp, err := http.Get("http://" + c.Party(b).Ready["metrics"] + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rec map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&rec); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return resp.StatusCode, rec
	}
	// waitReady polls /readyz until it answers want (the peer session may
	// still be starting, the module restarting).
	waitReady := func(b int, want bool) map[string]any {
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, rec := probe(b, "/readyz")
			if (code == 200) == want && rec["ready"] == want {
				return rec
			}
			if time.Now().After(deadline) {
				t.Fatalf("party %d /readyz: %d %v, want ready=%v", b, code, rec, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for b := range 2 {
		if code, _ := probe(b, "/healthz"); code != 200 {
			t.Fatalf("party %d /healthz: %d", b, code)
		}
		waitReady(b, true)
	}
	c.KillModule(0)
	if rec := waitReady(0, false); rec["why"] != "the module does not answer" || rec["module"] != false {
		t.Fatalf("party 0 without its module: %v", rec)
	}
	if code, _ := probe(0, "/healthz"); code != 200 {
		t.Fatalf("party 0 /healthz while its module is down: %d (the party itself is live)", code)
	}
	if err := c.StartModule(ctx, 0); err != nil {
		t.Fatal(err)
	}
	waitReady(0, true)
}

// TestPairSkipPaired: kord pair against a paired pair fails, and with
// --skip-paired succeeds without pairing again (a pairing Job that runs
// again after an upgrade). The application API runs TLS (as the cluster
// runs it): kord pair dials as the operator, and without its certificate
// gets nowhere.
func TestPairSkipPaired(t *testing.T) {
	_, c := startCluster(t, t.TempDir(), cluster.Options{Batch: 16})
	app := c.Party(0).Ready["app"]
	op := c.AppArgs(0)
	if out, errOut, code := runKord(t, append([]string{"pair", "--app", app, "--timeout", "10s"}, op...)...); code == 0 {
		t.Fatalf("pairing a paired pair again succeeded: %s %s", out, errOut)
	}
	if out, errOut, code := runKord(t, append([]string{"pair", "--app", app, "--skip-paired"}, op...)...); code != 0 || !strings.Contains(out, "already paired") {
		t.Fatalf("--skip-paired: exit %d: %s %s", code, out, errOut)
	}
	if out, errOut, code := runKord(t, "pair", "--app", app, "--skip-paired", "--timeout", "3s"); code == 0 {
		t.Fatalf("kord pair without the operator's certificate reached a TLS application API: %s %s", out, errOut)
	}
}
