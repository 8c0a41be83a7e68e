package cluster

import (
	"context"
	"strconv"
)

// ResNetMaxPending is the parties' --max-pending for a ResNet's material:
// a correlation counts its words against it, and ResNet-18's largest (a
// stage-4 weight mask) is over two million words, above the default.
const ResNetMaxPending = 8 << 20

// StartResNet is Start for a cluster that serves a ResNet's keys and
// correlations (kord bench resnet18-keys, kord infer demo --model
// resnet18…): both parties' --max-pending raised to ResNetMaxPending,
// ahead of o.PartyArgs.
func StartResNet(ctx context.Context, dir string, o Options) (*Cluster, error) {
	pending := []string{"--max-pending", strconv.Itoa(ResNetMaxPending)}
	for b := range o.PartyArgs {
		o.PartyArgs[b] = append(append([]string(nil), pending...), o.PartyArgs[b]...)
	}
	return Start(ctx, dir, o)
}
