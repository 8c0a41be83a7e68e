package fdpass

// Holder is what a server's per-connection value (gRPC's AuthInfo) offers
// when its connection can pass fds: the connection.
type Holder interface{ FDConn() *Conn }

// Of returns the fd-passing connection v holds (a Holder), or nil.
func Of(v any) *Conn {
	if h, ok := v.(Holder); ok {
		return h.FDConn()
	}
	return nil
}
