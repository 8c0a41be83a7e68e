package engine

import "github.com/kord-fss/kord/module/msg"

// SlabFDs makes and closes the sealed memfds a slab's keys are handed out
// in (module/socket on Linux): Make copies keys into a fresh memfd and
// seals it.
type SlabFDs interface {
	Make(keys []byte) (fd int, err error)
	Close(fd int)
}

// CollectSlabFD is CollectSlab for a party that takes a slab's keys as a
// sealed memfd. The first collect of a slab writes its keys into a fresh
// memfd (fds.Make) and wipes the module's copy: from then on the module
// remembers the fd, not the bytes, and a repeated collect hands out the
// same fd, until the slab falls out of the re-collect window (the fd is
// closed then). emit runs under the module's lock with fd valid only
// during the call (dup it to keep it); fd is -1 when the keys are bytes
// instead (Make failed, or the slab was first collected as bytes): s.Keys
// is valid during emit then. A slab handed out as a memfd is refused to
// a byte collect (CollectSlab): its bytes are gone.
func (d *Durable) CollectSlabFD(first uint64, count int, fds SlabFDs, emit func(s *msg.Slab, fd int)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, err := d.recentSlab(first, count, nil, 0); err != nil || s != nil {
		if err == nil {
			fd, ok := d.slabFD[s]
			if !ok {
				fd = -1
			}
			emit(s, fd)
		}
		return err
	}
	s, req, err := d.Engine.collectSlab(first, count, nil, nil, 0)
	if err != nil {
		return err
	}
	if d.noRing {
		// No window: the slab is handed out once, as bytes.
		emit(s, -1)
		d.recycleLocked(s)
		return nil
	}
	fd, ferr := fds.Make(s.Keys)
	if ferr == nil {
		if d.slabFD == nil {
			d.slabFD = map[*msg.Slab]int{}
		}
		d.slabFD[s], d.fds = fd, fds
		clear(s.Keys)
		s.Keys = s.Keys[:0]
	} else {
		fd = -1
		if !d.fdFailed {
			d.fdFailed = true
			d.Engine.log.Warn("module: a slab's memfd failed; handing slabs out as bytes", "err", ferr)
		}
	}
	d.keepCollected(s, req)
	emit(s, fd)
	return nil
}

// slabHandedAsFD reports whether s was handed out as a memfd (its bytes
// are gone); d.mu held.
func (d *Durable) slabHandedAsFD(s *msg.Slab) bool {
	_, ok := d.slabFD[s]
	return ok
}

// closeSlabFD closes s's memfd, if any, as s leaves the window; d.mu held.
func (d *Durable) closeSlabFD(s *msg.Slab) {
	if fd, ok := d.slabFD[s]; ok {
		delete(d.slabFD, s)
		d.fds.Close(fd)
	}
}
