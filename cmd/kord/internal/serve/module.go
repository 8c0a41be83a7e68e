package serve

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/kord-fss/kord/internal/daemon"
	"github.com/kord-fss/kord/module/provision"
	"github.com/kord-fss/kord/module/socket"
)

// ModuleConfig is what kord module serves from: its flags, checked by the
// command (party, socket and state given, workers not negative).
type ModuleConfig struct {
	// Files are the state file, provisioning secret and the module's
	// settings (--party, --state, --secret-file, --seal-key-file, --kem,
	// --window, --workers).
	Files daemon.ModuleFiles
	// Socket is the Unix socket path to serve the host on.
	Socket string
	// SocketGroup, if not empty, gives the socket this group (NAME or
	// GID) and mode 0660.
	SocketGroup string
	// PartyUIDs, AllowSameUID and AllowUnverified are --party-uid,
	// --allow-same-uid and --allow-unverified-peer (daemon.ModuleAccess).
	PartyUIDs                     []string
	AllowSameUID, AllowUnverified bool
	// RemoveSecretAfterPairing (--remove-secret-after-pairing): delete
	// Files.SecretFile once the module is paired.
	RemoveSecretAfterPairing bool
	// Journal, if not empty, is the file every keystream position used
	// is appended to (testing).
	Journal string
	// LogLevel is --log-level; PrefaultMiB --prefault-heap.
	LogLevel    string
	PrefaultMiB int
	// Out receives the readiness record (os.Stdout if nil).
	Out io.Writer
}

// Module runs a module process: it opens the state file, listens on the
// socket, writes the readiness record to c.Out and serves the host until
// ctx is done or SIGINT or SIGTERM arrives; then it removes the socket and
// returns nil. Bad settings are daemon.UsageErrors.
func Module(ctx context.Context, c ModuleConfig) error {
	party := c.Files.Party
	// The module's engine names its party in each of its own log
	// lines; base goes to it, log (with the party) everywhere else,
	// so no line carries "party" twice.
	base, err := daemon.Logger(c.LogLevel, "component", "module")
	if err != nil {
		return err
	}
	log := base.With("party", party)
	access, err := daemon.ModuleAccess(c.PartyUIDs, c.AllowSameUID, c.AllowUnverified)
	if err != nil {
		return err
	}
	if c.AllowUnverified && socket.PeerCredSupported {
		log.Warn("--allow-unverified-peer has no effect here: this OS reports peer credentials, and they are checked")
	}
	gid := -1
	if c.SocketGroup != "" {
		if gid, err = socket.LookupGroup(c.SocketGroup); err != nil {
			return daemon.BadInput("--socket-group: %v", err)
		}
	}
	// Before any secret is read: no core dumps, no tracing by the
	// module's own user without CAP_SYS_PTRACE.
	if ok, err := provision.Undumpable(); err != nil {
		log.Warn("could not mark the module undumpable", "err", err)
	} else if !ok {
		log.Info("this OS cannot mark the module undumpable: run it under its own user")
	}
	// The socket first: a start that fails on it (in use by a running
	// module, a bad path) fails before any state file is made.
	listen := socket.Listen
	if gid >= 0 {
		listen = func(p string) (net.Listener, error) { return socket.ListenGroup(p, gid) }
	}
	l, err := listen(c.Socket)
	if err != nil {
		return daemon.BadInput("--socket: %v", err)
	}
	defer l.Close()
	ready := false
	defer undoNewState(c.Files.State, &ready)()
	dev, st, err := daemon.OpenDurableModule(c.Files, base, log)
	if err != nil {
		return err
	}
	defer st.Close()
	opts := socket.ServerOptions{Logger: log, Access: access}
	if c.Journal != "" {
		f, err := os.OpenFile(c.Journal, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		opts.Journal = f
	}
	ctx, stop := signalContext(ctx)
	defer stop()
	defer daemon.StartProcess(fmt.Sprintf("module%d", party), c.PrefaultMiB)()
	context.AfterFunc(ctx, func() { l.Close() })
	if c.RemoveSecretAfterPairing && c.Files.SecretFile != "" {
		go removeSecretAfterPairing(ctx, dev, c.Files.SecretFile, log)
	}
	log.Info("module listening", "socket", c.Socket, "state", c.Files.State, "locked", dev.Locked())
	ready = true
	daemon.Ready(stdout(c.Out), "socket", c.Socket, "pid", os.Getpid())
	if err := socket.NewServer(dev, opts).Serve(l); err != nil {
		return fmt.Errorf("module: %w", err)
	}
	os.Remove(c.Socket)
	return nil
}
