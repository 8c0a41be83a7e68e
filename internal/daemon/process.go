package daemon

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"

	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"

	pb "github.com/kord-fss/kord/proto/kordpb"
)

// tuneGC trades memory for CPU in the daemons: their heaps are small
// and short-lived (frames, key shares), so collecting at 4× the live heap
// instead of 2× saves a tenth of their CPU. GOGC, if set, wins.
func tuneGC() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(400)
	}
}

// defaultPrefaultMiB is --prefault-heap's default: about the heap a daemon
// settles at under a sustained stream (`kord chaos soak` reports 40–66 MiB
// resident per daemon).
const defaultPrefaultMiB = 64

// Prefault writes one byte to every page of mib MiB of fresh heap and
// frees it, so that the pages a daemon's heap grows into are mapped before
// it serves. Without it a fresh daemon pays the kernel's first-touch page
// fault (trap, zeroed page, cgroup charge) on every page its heap grows into
// while it serves its first keys: in a 100 000-key `kord demo`, 8–12% of a
// module's CPU and 7.5% of a party's. The memory is taken in pieces of
// 256 KiB because the runtime hands out the lowest free pages first: pieces
// fill the free pages at the bottom of the heap, where the next spans will
// come from, where one large object would land wherever a run of its size
// is free. The runtime
// keeps freed pages mapped until its scavenger returns those beyond the
// heap's goal, so what a daemon never grows into goes back to the OS in the
// background as usual. mib ≤ 0 does nothing.
func Prefault(mib int) {
	const piece = 256 << 10
	if mib <= 0 {
		return
	}
	ps := os.Getpagesize()
	pieces := make([][]byte, mib<<20/piece)
	for i := range pieces {
		b := make([]byte, piece)
		for j := 0; j < len(b); j += ps {
			b[j] = 1
		}
		pieces[i] = b
	}
	runtime.KeepAlive(pieces)
	pieces = nil
	runtime.GC()
}

// PrefaultFlag adds --prefault-heap to a daemon command's flags.
func PrefaultFlag(fs *pflag.FlagSet) {
	fs.Int("prefault-heap", defaultPrefaultMiB, "MiB of heap to map at start, so that serving the first keys does not pay first-touch page faults (0: off)")
}

// maxPrefaultMiB bounds --prefault-heap (16 GiB).
const maxPrefaultMiB = 16 << 10

// PrefaultMiB returns the --prefault-heap of fs, checked.
func PrefaultMiB(fs *pflag.FlagSet) (int, error) {
	mib, err := fs.GetInt("prefault-heap")
	if err != nil {
		return 0, err
	}
	if mib < 0 || mib > maxPrefaultMiB {
		return 0, BadInput("--prefault-heap %d: want 0..%d MiB", mib, maxPrefaultMiB)
	}
	return mib, nil
}

// StartProcess tunes the garbage collector, prefaults prefaultMiB MiB
// of heap and starts a CPU profile when KORD_CPUPROFILE_DIR is set (for
// performance work on the daemons); the returned func stops the profile.
func StartProcess(name string, prefaultMiB int) func() {
	tuneGC()
	Prefault(prefaultMiB)
	return Profile(name)
}

// Profile starts a CPU profile when KORD_CPUPROFILE_DIR is set; the
// returned func stops it.
func Profile(name string) func() {
	dir := os.Getenv("KORD_CPUPROFILE_DIR")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(dir + "/" + name + ".pprof")
	if err != nil {
		return func() {}
	}
	pprof.StartCPUProfile(f)
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// ServerOptions are the daemons' gRPC server options: kord's codec, and
// transport buffers sized for a batch's keys, which travel as one message
// of up to a few hundred KiB: 256 KiB buffers move it in one write and few
// reads instead of one syscall per 32 KiB. gRPC's own transport buffers
// come from kordpb.BufferPool, which wipes each one when it is freed.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(64 << 20), grpc.InitialWindowSize(1 << 20), grpc.InitialConnWindowSize(1 << 20),
		grpc.WriteBufferSize(256 << 10), grpc.ReadBufferSize(256 << 10), grpc.ForceServerCodecV2(pb.Codec()),
		experimental.BufferPool(pb.BufferPool())}
}
