package inferdemo

import (
	"context"
	"fmt"
	"os"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/internal/daemon"
	"github.com/kord-fss/kord/internal/netshape"
)

// sites are the four daemons of two sites (cmd/kord/internal/cluster) with the
// sites' peer link through a netshape.Proxy: shaped by the run's link
// and counting every byte between the sites.
type sites struct {
	*cluster.Cluster
	proxy *netshape.Proxy
}

// startSites starts the daemons in dir with party 0 dialling party 1's
// peer port through a proxy shaped by link; resnet starts them with the
// ResNet demo's settings (cluster.StartResNet). On error nothing is left
// running.
func startSites(ctx context.Context, dir string, link netshape.Profile, resnet bool, o cluster.Options) (*sites, error) {
	s := &sites{}
	o.PeerVia = func(addr string) (string, error) {
		px, err := netshape.NewProxy(addr, link)
		if err != nil {
			return "", err
		}
		s.proxy = px
		return px.Addr(), nil
	}
	start := cluster.Start
	if resnet {
		start = cluster.StartResNet
	}
	c, err := start(ctx, dir, o)
	if err != nil {
		if s.proxy != nil {
			s.proxy.Close()
		}
		return nil, err
	}
	s.Cluster = c
	return s, nil
}

// crossed is the bytes between the sites so far, both directions.
func (s *sites) crossed() int64 { return s.proxy.Bytes() }

// Close stops the daemons, then the proxy.
func (s *sites) Close() {
	s.Cluster.Close()
	s.proxy.Close()
}

// ResNet runs `kord infer demo --model resnet18…` (ResNetDemo): by
// default the four daemons of two sites start as children of this
// process (2 modules, 2 party daemons, the sites' peer link through a
// counting proxy shaped by cfg.Link), which runs both online
// parties and takes every step's keys and correlations from the daemons
// (infer.DaemonSource); with inProcess, from a module pair in this
// process. Stage lines go to cfg.Log when set.
func ResNet(ctx context.Context, cfg ResNetDemoConfig, inProcess bool) (*ResNetDemoReport, error) {
	say := func(format string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format, a...)
		}
	}
	var s *sites
	if !inProcess {
		link := cfg.Link
		if link.Name == "" {
			link = netshape.Profile{Name: "loopback"}
		}
		say("starting 2 modules and 2 party daemons (peer link %s)… ", link.Name)
		dir, err := os.MkdirTemp("", "kord-resnet")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir) // after the daemons stop, even if they did not start
		if s, err = startSites(ctx, dir, link, true, cluster.Options{AppUnix: cfg.AppLink != "tcp"}); err != nil {
			return nil, fmt.Errorf("starting the daemons: %w", err)
		}
		defer s.Close()
		say("paired.\n")
		cfg.Daemons, cfg.InterSite = s.Apps(), s.crossed
	}
	// KORD_CPUPROFILE_DIR profiles this process (both online parties and
	// the supplier) as the daemons profile themselves.
	stopProfile := daemon.Profile("infer-resnet")
	rep, err := ResNetDemo(ctx, cfg)
	stopProfile()
	if err != nil {
		return nil, err
	}
	rep.AppLink = InProcessAppLink
	if s != nil {
		rep.AppLink = cluster.AppLinkName(cfg.AppLink)
		rep.PeakRSSByProcess = s.PeakRSS()
	}
	return rep, nil
}
