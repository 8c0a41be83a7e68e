package moduletest_test

import (
	"context"
	"testing"

	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/moduletest"
	"github.com/kord-fss/kord/module/msg"
)

// TestPairs: the software and the durable pair come back paired.
func TestPairs(t *testing.T) {
	sw := [2]module.Device{moduletest.Software(t, 0, moduletest.Secret, ""), moduletest.Software(t, 1, moduletest.Secret, "")}
	moduletest.Pair(t, sw[0], sw[1])
	du := moduletest.DurablePair(t, 0)
	for _, d := range []module.Device{sw[0], sw[1], du[0], du[1]} {
		p, err := d.Poll(context.Background(), &msg.PollRequest{})
		if err != nil || !p.Paired {
			t.Fatalf("not paired: %+v %v", p, err)
		}
	}
}
