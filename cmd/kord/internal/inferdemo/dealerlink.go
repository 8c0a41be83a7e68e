package inferdemo

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/kord-fss/kord/gates"
	"github.com/kord-fss/kord/infer"
	"github.com/kord-fss/kord/internal/both"
	"github.com/kord-fss/kord/internal/netshape"
)

// DealerLink is the TRUSTED-DEALER BASELINE as LLAMA deploys it: one dealer
// generates every key and correlation of both parties
// (gates.DealerSource, DealerCorr) and sends each party its own material
// over that party's own link — two TCP connections (real loopback sockets
// here), each shaped by its own netshape profile and used concurrently.
// Each party parses what it received into its Session and Material. It
// exists to measure what kord's modules avoid: the dealer ships every
// byte of the material over the network; the modules ship none.
//
// In this process the dealer and both receiving ends run as goroutines;
// the five-process version puts the dealer in its own process, with the
// same framing (an 8-byte little-endian length, then the encoding of
// wire.go). Not safe for concurrent use.
type DealerLink struct {
	ring  int
	sp    *infer.Supply
	links [2]dealerPipe
	sent  [2]int64
}

type dealerPipe struct{ dealer, party net.Conn }

// maxShipment bounds one received frame (1 GiB): a corrupt length cannot
// make a party allocate without bound.
const maxShipment = 1 << 30

// NewDealerLink starts a dealer for arch's sessions with both parties'
// links shaped by p, draws the session's weight masks and ships each party
// its session, which it returns as the parties parsed it.
func NewDealerLink(arch *infer.Model, p netshape.Profile) (*DealerLink, [2]*infer.Session, error) {
	var sess [2]*infer.Session
	d := &DealerLink{ring: arch.Ring}
	for b := 0; b < 2; b++ {
		x, y, err := netshape.TCPPair(p)
		if err != nil {
			d.Close()
			return nil, sess, fmt.Errorf("infer: dealer link to party %d: %w", b, err)
		}
		d.links[b] = dealerPipe{dealer: x, party: y}
	}
	sp, ds, err := infer.NewSupply(arch, infer.Sources{Keys: &gates.DealerSource{}, Corr: &infer.DealerCorr{}})
	if err != nil {
		d.Close()
		return nil, sess, err
	}
	d.sp = sp
	var raw [2][]byte
	for b := 0; b < 2; b++ {
		raw[b], err = ds[b].MarshalBinary(arch.Ring)
		ds[b].Wipe()
		if err != nil {
			d.Close()
			return nil, sess, err
		}
	}
	got, err := d.ship(raw)
	if err != nil {
		d.Close()
		return nil, sess, fmt.Errorf("infer: dealer, session: %w", err)
	}
	for b := 0; b < 2; b++ {
		sess[b], err = infer.ParseSession(got[b])
		clear(got[b])
		if err == nil && sess[b].B != b {
			err = fmt.Errorf("party %d received party %d's session", b, sess[b].B)
		}
		if err != nil {
			sess[0].Wipe()
			sess[1].Wipe()
			d.Close()
			return nil, [2]*infer.Session{}, fmt.Errorf("infer: dealer, session: %w", err)
		}
	}
	return d, sess, nil
}

// Next generates one evaluation's material for both parties, ships each
// party its own over its link (both links at once) and returns the
// material as the parties parsed it. The dealer's copies are wiped.
func (d *DealerLink) Next() ([2]*infer.Material, error) {
	var out [2]*infer.Material
	mat, err := d.sp.Gen()
	if err != nil {
		return out, err
	}
	raw, err := marshalBoth(mat, d.ring)
	if err != nil {
		return out, fmt.Errorf("infer: dealer: %w", err)
	}
	got, err := d.ship(raw)
	if err != nil {
		return out, fmt.Errorf("infer: dealer: %w", err)
	}
	err = both.Each(func(b int) (err error) { // each party parses its own, at once
		out[b], err = infer.ParseMaterial(got[b])
		clear(got[b])
		if err == nil && out[b].B != b {
			err = fmt.Errorf("party %d received party %d's material", b, out[b].B)
		}
		if err != nil {
			return fmt.Errorf("party %d: %w", b, err)
		}
		return nil
	})
	if err != nil {
		out[0].Wipe()
		out[1].Wipe()
		return [2]*infer.Material{}, fmt.Errorf("infer: dealer: %w", err)
	}
	return out, nil
}

// marshalBoth encodes both parties' material at once, wiping it; on an
// error nothing encoded is returned.
func marshalBoth(mat [2]*infer.Material, ring int) (raw [2][]byte, err error) {
	err = both.Each(func(b int) (err error) {
		raw[b], err = mat[b].MarshalBinary(ring)
		mat[b].Wipe()
		return err
	})
	if err != nil {
		clear(raw[0])
		clear(raw[1])
		return [2][]byte{}, err
	}
	return raw, nil
}

// WriteShipment writes one dealer shipment (an encoded Session or
// Material) as an 8-byte little-endian length and the bytes: the framing
// of a dealer's link, in process today and between processes next.
func WriteShipment(w io.Writer, data []byte) error {
	var h [8]byte
	binary.LittleEndian.PutUint64(h[:], uint64(len(data)))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	_, err := w.Write(data)
	return err
}

// ReadShipment reads one shipment written by WriteShipment; a length
// above 1 GiB is refused before anything is allocated.
func ReadShipment(r io.Reader) ([]byte, error) {
	var h [8]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint64(h[:])
	if n > maxShipment {
		return nil, fmt.Errorf("%w: shipment of %d bytes exceeds %d", infer.ErrMaterialFormat, n, maxShipment)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		clear(buf)
		return nil, err
	}
	return buf, nil
}

// ship sends raw[b] to party b over link b, both links concurrently, and
// returns what each party read. raw is wiped.
func (d *DealerLink) ship(raw [2][]byte) ([2][]byte, error) {
	var got [2][]byte
	var errs [4]error
	var wg sync.WaitGroup
	for b := 0; b < 2; b++ {
		wg.Add(2)
		go func(b int) { // the dealer's sender to party b
			defer wg.Done()
			err := WriteShipment(d.links[b].dealer, raw[b])
			clear(raw[b])
			if err != nil {
				errs[2*b] = fmt.Errorf("sending to party %d: %w", b, err)
				_ = d.links[b].dealer.Close()
			}
		}(b)
		go func(b int) { // party b's receiver
			defer wg.Done()
			buf, err := ReadShipment(d.links[b].party)
			if err != nil {
				errs[2*b+1] = fmt.Errorf("party %d receiving: %w", b, err)
				_ = d.links[b].party.Close()
				return
			}
			got[b] = buf
		}(b)
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		clear(got[0])
		clear(got[1])
		return [2][]byte{}, err
	}
	for b := 0; b < 2; b++ {
		d.sent[b] += 8 + int64(len(got[b]))
	}
	return got, nil
}

// Sent is the bytes shipped so far to each party, framing included.
func (d *DealerLink) Sent() [2]int64 { return d.sent }

// Close closes both links.
func (d *DealerLink) Close() {
	if d == nil {
		return
	}
	for _, l := range d.links {
		if l.dealer != nil {
			_ = l.dealer.Close()
		}
		if l.party != nil {
			_ = l.party.Close()
		}
	}
}
