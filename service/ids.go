package service

import "sort"

// idSet is the set of request ids used on one application stream, as
// sorted disjoint intervals: ids numbered in order (the usual case) take
// one interval, whatever their number.
type idSet struct {
	iv [][2]uint64 // [lo, hi], sorted, disjoint, not adjacent
}

// has reports whether id is in the set.
func (s *idSet) has(id uint64) bool {
	i := sort.Search(len(s.iv), func(i int) bool { return s.iv[i][1] >= id })
	return i < len(s.iv) && s.iv[i][0] <= id
}

// add puts id in the set.
func (s *idSet) add(id uint64) {
	n := len(s.iv)
	if n > 0 && s.iv[n-1][1] < id { // fast path: ids in order
		if s.iv[n-1][1]+1 == id {
			s.iv[n-1][1] = id
		} else {
			s.iv = append(s.iv, [2]uint64{id, id})
		}
		return
	}
	i := sort.Search(n, func(i int) bool { return s.iv[i][1] >= id })
	if i < n && s.iv[i][0] <= id {
		return // already in
	}
	joinLeft := i > 0 && s.iv[i-1][1]+1 == id
	joinRight := i < n && id+1 == s.iv[i][0]
	switch {
	case joinLeft && joinRight:
		s.iv[i-1][1] = s.iv[i][1]
		s.iv = append(s.iv[:i], s.iv[i+1:]...)
	case joinLeft:
		s.iv[i-1][1] = id
	case joinRight:
		s.iv[i][0] = id
	default:
		s.iv = append(s.iv, [2]uint64{})
		copy(s.iv[i+1:], s.iv[i:])
		s.iv[i] = [2]uint64{id, id}
	}
}
