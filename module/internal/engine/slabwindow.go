// The re-collect window of bulk slabs: the slabs a durable module
// handed out, with the request each was generated for.

package engine

import "github.com/kord-fss/kord/module/msg"

// recentSlab returns the slab of the bulk at first from the re-collect
// window, or nil if the window has none there; a bulk there of another
// size than count, or generated for another request than expect (nil: no
// check; its shares those of keys at…), is refused (a bulk is collected
// whole). d.mu held.
func (d *Durable) recentSlab(first uint64, count int, expect *msg.Bulk, at int) (*msg.Slab, error) {
	if count <= 0 {
		return nil, bad("Count: %d, want the bulk's N", count)
	}
	for i, s := range d.slabs {
		if s.First == first {
			if s.N != count {
				return nil, bad("Count: the bulk at counter %d has %d keys, not %d (collect a bulk whole)", first, s.N, count)
			}
			if err := d.checkSlabReq(first, &d.slabReqs[i], expect, at); err != nil {
				return nil, err
			}
			return s, nil
		}
	}
	return nil, nil
}

// CheckSlab refuses a collect of the bulk at first (count keys) unless
// the bulk, remembered or waiting to be collected, was generated for
// expect (its shares those of keys at… in bound mode: msg.CollectRequest.
// Expect and ExpectAt): a party's re-collect after its restart checks this first, then
// collects the same counters (a bulk's counters are never reused, so the
// slab there stays the one checked). It is counted like a refused
// re-collect (RejectRecollect).
func (d *Durable) CheckSlab(first uint64, count int, expect *msg.Bulk, at int) error {
	if expect == nil {
		return bad("Expect: missing")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, err := d.recentSlab(first, count, expect, at); err != nil || s != nil {
		return err
	}
	for i, sl := range d.Engine.slabs {
		if sl.First == first {
			if sl.N != count {
				return bad("Count: the bulk at counter %d has %d keys, not %d (collect a bulk whole)", first, sl.N, count)
			}
			return d.checkSlabReq(first, &d.Engine.slabReqs[i], expect, at)
		}
	}
	return bad("Counter: no bulk output at counter %d is ready or remembered", first)
}

// keepCollected remembers a slab handed out, for repeats. It keeps at
// least the last minSlabs slabs and at least the last collectCache keys
// (more than a host holds between its module's collect and the
// application's receipt: crash recovery re-collects by counter), and
// wipes what falls out: each remembered key is wiped once, here.
func (d *Durable) keepCollected(s *msg.Slab, req slabReq) {
	d.slabs = append(d.slabs, s)
	d.slabReqs = append(d.slabReqs, req)
	d.slabKeys += s.N
	drop := 0
	for len(d.slabs)-drop > minSlabs && d.slabKeys-d.slabs[drop].N >= collectCache {
		d.recycleLocked(d.slabs[drop])
		d.slabReqs[drop].wipe()
		d.slabKeys -= d.slabs[drop].N
		drop++
	}
	if drop > 0 {
		n := copy(d.slabs, d.slabs[drop:])
		clear(d.slabs[n:])
		d.slabs = d.slabs[:n]
		m := copy(d.slabReqs, d.slabReqs[drop:])
		clear(d.slabReqs[m:])
		d.slabReqs = d.slabReqs[:m]
	}
}
