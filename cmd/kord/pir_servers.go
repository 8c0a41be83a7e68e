package main

import (
	"context"
	"net"
	"strconv"
	"strings"
)

// distinctServers refuses two PIR server addresses that reach the same
// host:port: that one server would get both DPF keys of a query, and
// their sum is the point function of the index (docs/pir.md: the two
// servers must not collude, so they must at least be two). Both host
// names are resolved; any address in common with the same port is
// refused, naming both.
func distinctServers(ctx context.Context, a, b string) error {
	ea, err := endpoints(ctx, "--servers", a)
	if err != nil {
		return err
	}
	eb, err := endpoints(ctx, "--servers", b)
	if err != nil {
		return err
	}
	for _, x := range ea {
		for _, y := range eb {
			if x == y {
				return badInput("--servers %s and %s are the same server (%s): one server would receive both keys of every query and learn the index; give two servers run by parties that do not collude", a, b, x)
			}
		}
	}
	return nil
}

// endpoints resolves host:port to its IP:port strings (every loopback or
// unspecified address as one host).
func endpoints(ctx context.Context, flag, addr string) ([]string, error) {
	host, port, err := net.SplitHostPort(strings.TrimSpace(addr))
	if err != nil {
		return nil, badInput("%s: %q is not host:port: %v", flag, addr, err)
	}
	p, err := net.DefaultResolver.LookupPort(ctx, "tcp", port)
	if err != nil {
		return nil, badInput("%s: %q: unknown port %q", flag, addr, port)
	}
	if host == "" {
		host = "localhost"
	}
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, badInput("%s: cannot resolve %q: %v", flag, host, err)
	}
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		h := ip.IP.String()
		if ip.IP.IsLoopback() || ip.IP.IsUnspecified() {
			h = "this host" // 127.0.0.0/8, ::1, 0.0.0.0 and :: all reach it
		} else if v4 := ip.IP.To4(); v4 != nil {
			h = v4.String()
		}
		out = append(out, net.JoinHostPort(h, strconv.Itoa(p)))
	}
	return out, nil
}
