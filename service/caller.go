package service

import "context"

// Caller is who is calling the application API, as the server's
// authentication (package appauth) established it: App is the application
// identity its request ids are scoped by, Operator whether it may call
// Pair and Status. A call whose context carries no Caller (a party
// registered without authentication, the in-process LocalPair) is the
// anonymous application "".
type Caller struct {
	App      string
	Operator bool
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the Caller ctx carries (ok false: none).
func CallerFrom(ctx context.Context) (c Caller, ok bool) {
	c, ok = ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// appOf is the application identity of a call's context ("" if none).
func appOf(ctx context.Context) string {
	c, _ := CallerFrom(ctx)
	return c.App
}

// rid names a request at a site: its application identity and the id
// the application gave it. Ids are unique per application, not per site.
type rid struct {
	app string
	id  uint64
}

// withApp folds a batch's application identity into the transcript before
// its header (chain): nothing for the anonymous application, so that
// transcripts without identities are as before.
func withApp(prev []byte, app string) []byte {
	if app == "" {
		return prev
	}
	b := make([]byte, 0, len(prev)+5+len(app))
	b = append(b, prev...)
	b = append(b, 'A', byte(len(app)>>8), byte(len(app)))
	return append(b, app...)
}

// MaxAppName is the longest application identity, in bytes.
const MaxAppName = 128
