package serve

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/kord-fss/kord/module/msg"
)

// poller is what removeSecretAfterPairing asks whether the module is
// paired (a module's Poll).
type poller interface {
	Poll(ctx context.Context, req *msg.PollRequest) (*msg.PollResponse, error)
}

// pairPoll is how often removeSecretAfterPairing looks.
const pairPoll = 200 * time.Millisecond

// removeSecretAfterPairing deletes the provisioning secret file once the
// module reports itself paired (its pairing is then in the state file,
// and a paired module never reads the secret again); at once if it is
// paired already. It returns when the file is gone, or when ctx ends.
// Where the file is a copy on a tmpfs (the Helm chart's), nothing of the
// secret is left on the node after pairing.
func removeSecretAfterPairing(ctx context.Context, dev poller, path string, log *slog.Logger) {
	t := time.NewTicker(pairPoll)
	defer t.Stop()
	for {
		r, err := dev.Poll(ctx, &msg.PollRequest{})
		if err == nil && r.Paired {
			switch err := os.Remove(path); {
			case err == nil:
				log.Info("module is paired: provisioning secret file removed (--remove-secret-after-pairing)", "secret_file", path)
			case errors.Is(err, fs.ErrNotExist):
			default:
				log.Warn("module is paired, but the provisioning secret file could not be removed", "secret_file", path, "err", err)
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
