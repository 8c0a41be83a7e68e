package socket

import (
	"context"
	"errors"
	"net"

	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/modulepb"
)

// slabFDCollector is a module that hands a slab's keys out as a sealed
// memfd (module.Durable.CollectSlabFD).
type slabFDCollector interface {
	CollectSlabFD(ctx context.Context, first uint64, count int, fds module.SlabFDs, emit func(s *msg.Slab, fd int)) error
}

// memfds makes the sealed memfds of slabs (memfd_linux.go).
type memfds struct{}

func (memfds) Make(keys []byte) (int, error) { return sealedMemfd(keys) }
func (memfds) Close(fd int)                  { closeFD(fd) }

// slabFDParts answers a request that ends with a slab collect and asks
// for slab fds: the response carries the slab without its keys
// (Slab.keys_fd) and fd, a duplicate of the module's memfd of the slab
// that the caller passes with the response's first byte and then closes
// (-1: the module answered with the keys as bytes, in buf).
func (s *Server) slabFDParts(ctx context.Context, req *pb.ModuleRequest, sc slabFDCollector, c *pb.CollectRequest, dst []byte) (buf []byte, out net.Buffers, fd int, err error) {
	fd = -1
	head, skipped := s.slabHead(ctx, req)
	defer wipeResults(head)
	if skipped {
		buf, err = appendMsg(dst, head)
		return buf, net.Buffers{buf}, -1, err
	}
	emitted := false
	cerr := s.checkExpect(ctx, c)
	if cerr != nil {
		goto refused
	}
	cerr = sc.CollectSlabFD(ctx, c.GetCounter(), n32(c.GetCount()), s.memfds, func(sl *msg.Slab, mfd int) {
		emitted = true
		ps := slabToPB(sl)
		if mfd >= 0 {
			// A duplicate: the module may close its fd (the slab leaves
			// its window) while this one is being sent.
			d, derr := dupFD(mfd)
			if derr != nil {
				err = derr
				return
			}
			fd = d
			ps.Keys, ps.KeysFd = nil, true
		}
		cr := &pb.CollectResponse{Counter: sl.First, Mode: uint32(sl.Mode), Slab: ps}
		head.Results = append(head.Results, &pb.Result{Op: &pb.Result_Collect{Collect: cr}})
		buf, err = appendMsg(dst, head)
		cr.Slab = nil // the module's memory: not this response's to wipe
	})
refused:
	if !emitted && err == nil {
		if cerr == nil {
			cerr = errors.New("socket: the module emitted no slab")
		}
		head.Results = append(head.Results, fail(cerr))
		buf, err = appendMsg(dst, head)
	}
	if err != nil {
		if fd >= 0 {
			closeFD(fd)
		}
		clear(buf)
		return dst[:0], nil, -1, err
	}
	return buf, net.Buffers{buf}, fd, nil
}
