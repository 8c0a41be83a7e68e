package mpspdz

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// FileReport is what Verify found in one file.
type FileReport struct {
	File    string `json:"file"`   // the name under 2-DR-64
	Kind    string `json:"kind"`   // Kind.String()
	Player  int    `json:"player"` // 0 or 1
	Tuples  int    `json:"tuples"`
	Bytes   int64  `json:"bytes"`
	Checked bool   `json:"relations_checked"` // both players' files present and every tuple opened correctly
}

// Verify checks every preprocessing file under dir/2-DR-64: its header and
// size (Parse), and, where both players' files of a kind are present, every
// tuple's relation (CheckAll). Files of other names are skipped. The first
// problem is returned, naming the file and, for a relation, the tuple
// index; the reports cover the files checked before it.
func Verify(dir string) ([]FileReport, error) {
	sub := filepath.Join(dir, Subdir)
	ents, err := os.ReadDir(sub)
	if err != nil {
		return nil, err
	}
	kinds := map[Kind][Players]bool{}
	for _, e := range ents {
		k, p, ok := ParseFileName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		have := kinds[k]
		have[p] = true
		kinds[k] = have
	}
	if len(kinds) == 0 {
		return nil, fmt.Errorf("%s: no Triples, Squares, Bits or Matrix files", sub)
	}
	order := make([]Kind, 0, len(kinds))
	for k := range kinds {
		order = append(order, k)
	}
	sort.Slice(order, func(i, j int) bool { return order[i].FileName(0) < order[j].FileName(0) })
	var reps []FileReport
	for _, k := range order {
		have := kinds[k]
		var shares [Players][]uint64
		for p := range Players {
			if !have[p] {
				continue
			}
			s, err := ReadFile(dir, k, p)
			if err != nil {
				return reps, err
			}
			shares[p] = s
			reps = append(reps, FileReport{File: k.FileName(p), Kind: k.String(), Player: p, Tuples: len(s) / k.Words(),
				Bytes: int64(HeaderSize + 8*len(s))})
		}
		if have[0] && have[1] {
			if err := CheckAll(k, shares[0], shares[1]); err != nil {
				return reps, fmt.Errorf("%s and %s: %w", Path(dir, k, 0), k.FileName(1), err)
			}
			reps[len(reps)-1].Checked, reps[len(reps)-2].Checked = true, true
		}
	}
	return reps, nil
}
