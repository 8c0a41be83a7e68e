package llamaexport

import (
	"context"

	"github.com/kord-fss/kord/client"
)

// pair runs the one-time pairing through party 0.
func pair(ctx context.Context, addr string) error {
	c, err := client.Dial(addr, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Pair(ctx)
}
