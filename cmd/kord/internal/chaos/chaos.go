// Package chaos attacks a kord deployment of real processes (a
// cluster.Cluster) while a load streams keys through it, and checks what
// the application receives: kill -9 of modules and parties and their
// restart (Crash), a module state file restored from an older copy
// (Rollback), a fault proxy on the parties' peer link (Network), and a
// sustained stream (Soak). Each returns a Report whose OK says whether
// every check held; kord chaos prints it.
package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/cmd/kord/internal/loadgen"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
)

// Report is the JSON result of a fault run.
type Report struct {
	Test string `json:"test"`
	// AppLink is how the load reaches the parties (cluster.AppLinkName).
	AppLink string `json:"app_link"`
	// SlabsHanded counts the messages whose keys the load received as the
	// memfd a module wrote them into (the same-host hand-off).
	SlabsHanded     uint64 `json:"slabs_handed"`
	Trials          int    `json:"trials,omitempty"`
	PairsVerified   int    `json:"pairs_verified"`
	PairsMismatched int    `json:"pairs_mismatched"`
	OneSided        int    `json:"one_sided_deliveries"`
	// OrphanedShares: requests whose key share reached the application at
	// one site and whose partner never reached the other (a refusal, or
	// no answer at all after every resend); must be 0.
	OrphanedShares int `json:"orphaned_shares"`
	// VoidedAfterDelivery: key shares an application received and later
	// got a void notice for (the other site could not complete the pair
	// after a restart): not orphaned, but not usable.
	VoidedAfterDelivery int `json:"voided_after_delivery"`
	// Kills counts the kill -9s per kind killed (crash): a daemon
	// (module0 … party1), a whole site (site0, site1: its module and
	// party together) or both parties (both-parties).
	Kills map[string]int `json:"kills,omitempty"`
	// RecoveryMs: per kind killed, the time from the restart (the
	// processes ready) to the first new pair delivered at both sites, in
	// milliseconds (crash).
	RecoveryMs         map[string]Dist    `json:"recovery_ms,omitempty"`
	Refused            int                `json:"requests_refused"`
	PositionsUsed      [2]int             `json:"keystream_positions_used"`
	PositionsReused    [2]int             `json:"keystream_positions_reused"`
	CounterRollbacks   int                `json:"counter_rollbacks"`
	RollbacksDetected  int                `json:"rollbacks_detected,omitempty"`
	LockedAfterRestore bool               `json:"locked_after_restore,omitempty"`
	Resyncs            uint64             `json:"resyncs"`
	Faults             int                `json:"faults_injected,omitempty"`
	KeysPerSec         float64            `json:"keys_per_sec,omitempty"`
	RSSMiB             map[string]float64 `json:"rss_mib,omitempty"`
	Seconds            float64            `json:"seconds"`
	OK                 bool               `json:"ok"`
	Problems           []string           `json:"problems,omitempty"`
}

// Dist is a distribution of durations in milliseconds.
type Dist struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	Max    float64 `json:"max"`
}

func distOf(ms []float64) Dist {
	if len(ms) == 0 {
		return Dist{}
	}
	s := append([]float64(nil), ms...)
	sort.Float64s(s)
	q := func(f float64) float64 { return s[min(len(s)-1, int(f*float64(len(s))))] }
	return Dist{N: len(s), Median: q(0.5), P90: q(0.9), Max: s[len(s)-1]}
}

var classes = []loadgen.Class{
	{Mode: msg.Bound, Tier: msg.Keystream, Type: fss.DPF, InBits: 16, OutBits: 16},
	{Mode: msg.Bound, Tier: msg.MAC, Type: fss.DCF, InBits: 16, OutBits: 8},
	{Mode: msg.Bound, Tier: msg.BatchMAC, Type: fss.DPF, InBits: 32, OutBits: 32},
	{Mode: msg.Derived, Type: fss.DCF, InBits: 16, OutBits: 16},
}

// voidGrace is how long a round waits for the void notices of ids that
// got keys at one site and a refusal at the other (a notice rides on the
// next batch between the parties).
const voidGrace = 3 * time.Second

// positions reads a module journal and counts positions and repeats.
func positions(path string) (used, reused int, err error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, 0, nil
		}
		return 0, 0, err
	}
	defer f.Close()
	seen := map[uint64]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		c, err := strconv.ParseUint(strings.TrimSpace(sc.Text()), 10, 64)
		if err != nil {
			continue // a line cut by kill -9
		}
		if seen[c] {
			reused++
		}
		seen[c] = true
		used++
	}
	return used, reused, sc.Err()
}

func (r *Report) finish(l *load, c *cluster.Cluster, start time.Time) {
	r.PairsVerified, r.PairsMismatched, r.Refused, r.OneSided = l.verified, l.mismatched, l.refused, l.oneSided
	r.OrphanedShares, r.VoidedAfterDelivery = l.oneSided, l.voidedAfter
	for b := 0; b < 2; b++ {
		u, re, err := positions(c.JournalPath(b))
		if err != nil {
			r.Problems = append(r.Problems, err.Error())
		}
		r.PositionsUsed[b], r.PositionsReused[b] = u, re
	}
	if st, err := c.App(0).Status(context.Background()); err == nil {
		r.Resyncs += st.Resyncs // (crash: plus those of party 0's earlier runs)
	}
	r.Seconds = time.Since(start).Seconds()
	r.AppLink = c.AppLink()
	r.SlabsHanded = client.HandedMessages() - l.handed0
	if r.PairsMismatched > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d mismatched pairs delivered", r.PairsMismatched))
	}
	if r.OneSided > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d orphaned shares: requests got keys at one site and a refusal at the other", r.OneSided))
	}
	if r.PositionsReused[0]+r.PositionsReused[1] > 0 {
		r.Problems = append(r.Problems, "a keystream position was used twice")
	}
	if r.CounterRollbacks > 0 {
		r.Problems = append(r.Problems, "a module's counter went back")
	}
	if r.PairsVerified == 0 {
		r.Problems = append(r.Problems, "no key pair was delivered")
	}
	r.OK = len(r.Problems) == 0
}
