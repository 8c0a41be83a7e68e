// Package mpspdzrun is kord mpspdz: it fills MP-SPDZ's semi2k Player-Data
// (package mpspdz) with tuples drawn from a module pair — in process, or
// through one or both sites' party daemons — and verifies such a
// directory.
package mpspdzrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/kord-fss/kord/mpspdz"
)

// Item is one file kind to fill and how many tuples it gets.
type Item struct {
	Kind  mpspdz.Kind
	Count int
}

// Source draws tuples: each served player's shares of n tuples of kind k
// in file order (mpspdz.FromCorr), nil for a player it does not serve.
// seq numbers an export's requests 0, 1, … in file order; Concurrent says
// whether Draw may be called for several at once.
type Source interface {
	Draw(ctx context.Context, seq uint64, k mpspdz.Kind, n int) ([mpspdz.Players][]uint64, error)
	Concurrent() bool
}

// Options configure Export.
type Options struct {
	Dir     string               // the Player-Data directory
	Items   []Item               // what to write
	Players [mpspdz.Players]bool // whose files to write
	Force   bool                 // overwrite existing files
	// Chunk is the most scalar tuples one request draws (0 =
	// DefaultChunk); a matrix request is always one triple.
	Chunk int
	// InFlight is the most requests outstanding at once for a concurrent
	// source (0 = DefaultInFlight).
	InFlight int
}

// DefaultInFlight keeps both parties' batches busy.
const DefaultInFlight = 4

// DefaultChunk keeps one request's reply near 400 KiB (16384 triples); larger
// requests measured no faster (BENCHMARKS.md, "MP-SPDZ semi2k tuples").
const DefaultChunk = 1 << 14

// File is one written file.
type File struct {
	Path   string `json:"path"`
	Kind   string `json:"kind"`
	Player int    `json:"player"`
	Tuples int    `json:"tuples"`
}

// Report is what Export wrote.
type Report struct {
	Files        []File  `json:"files"`
	Tuples       int     `json:"tuples"` // per player
	Requests     int     `json:"requests"`
	Seconds      float64 `json:"seconds"`
	TuplesPerSec float64 `json:"tuples_per_sec"`
}

// Export draws every item's tuples from src and writes the served players'
// files. Every file is checked before any request is made, so an existing
// file (without Force) or a bad item costs no counter; on a later failure
// the files written so far are removed.
func Export(ctx context.Context, src Source, o Options) (_ *Report, err error) {
	chunk := o.Chunk
	if chunk <= 0 {
		chunk = DefaultChunk
	}
	if !o.Players[0] && !o.Players[1] {
		return nil, errors.New("mpspdz: no player's files to write")
	}
	seen := map[mpspdz.Kind]bool{}
	for _, it := range o.Items {
		if it.Count < 1 {
			return nil, fmt.Errorf("mpspdz: %s: count %d, want at least 1", it.Kind, it.Count)
		}
		if seen[it.Kind] {
			return nil, fmt.Errorf("mpspdz: %s given twice", it.Kind)
		}
		seen[it.Kind] = true
		if _, err := mpspdz.Shape(it.Kind, min(it.Count, chunk)); err != nil && it.Kind.Name != "Matrix" {
			return nil, err
		}
		for p := range mpspdz.Players {
			if o.Players[p] && !o.Force {
				if _, err := os.Stat(mpspdz.Path(o.Dir, it.Kind, p)); err == nil {
					return nil, fmt.Errorf("%s exists (give --force to overwrite it)", mpspdz.Path(o.Dir, it.Kind, p))
				}
			}
		}
	}
	if len(o.Items) == 0 {
		return nil, errors.New("mpspdz: nothing to export (give --triples, --squares, --bits or --matrix)")
	}
	var open []*mpspdz.Writer
	defer func() {
		for _, w := range open {
			w.Close()
			if err != nil {
				os.Remove(w.Path())
			}
		}
	}()
	rep := &Report{}
	var seq uint64
	start := time.Now()
	for _, it := range o.Items {
		var ws [mpspdz.Players]*mpspdz.Writer
		for p := range mpspdz.Players {
			if o.Players[p] {
				w, err := mpspdz.Create(o.Dir, it.Kind, p, o.Force)
				if err != nil {
					return nil, err
				}
				open = append(open, w)
				ws[p] = w
			}
		}
		per := chunk
		if it.Kind.Name == "Matrix" {
			per = 1
		}
		window := 1
		if src.Concurrent() {
			window = o.InFlight
			if window <= 0 {
				window = DefaultInFlight
			}
		}
		for done := 0; done < it.Count; {
			// Up to window requests at once, written in order.
			type got struct {
				sh  [mpspdz.Players][]uint64
				err error
			}
			var res []got
			var ns []int
			for len(ns) < window && done < it.Count {
				n := min(per, it.Count-done)
				ns = append(ns, n)
				done += n
			}
			res = make([]got, len(ns))
			var wg sync.WaitGroup
			for i, n := range ns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res[i].sh, res[i].err = src.Draw(ctx, seq+uint64(i), it.Kind, n)
				}()
			}
			wg.Wait()
			seq += uint64(len(ns))
			for i, r := range res {
				if r.err != nil {
					for _, r := range res {
						clear(r.sh[0])
						clear(r.sh[1])
					}
					return nil, fmt.Errorf("mpspdz: %s, request %d of %d tuples: %w", it.Kind, i, ns[i], r.err)
				}
			}
			for i, r := range res {
				rep.Requests++
				for p, w := range ws {
					if w == nil {
						continue
					}
					if len(r.sh[p]) != ns[i]*it.Kind.Words() {
						return nil, fmt.Errorf("mpspdz: %s: player %d got %d shares for %d tuples", it.Kind, p, len(r.sh[p]), ns[i])
					}
					if err := w.Write(r.sh[p]); err != nil {
						return nil, err
					}
					clear(r.sh[p])
				}
			}
		}
		for p, w := range ws {
			if w != nil {
				rep.Files = append(rep.Files, File{Path: w.Path(), Kind: it.Kind.String(), Player: p, Tuples: w.Tuples()})
			}
		}
		rep.Tuples += it.Count
	}
	for _, w := range open {
		if err := w.Close(); err != nil {
			return nil, err
		}
	}
	open = nil
	rep.Seconds = time.Since(start).Seconds()
	if rep.Seconds > 0 {
		rep.TuplesPerSec = float64(rep.Tuples) / rep.Seconds
	}
	return rep, nil
}
