package kordpb

// Error classes of KeyReply.error_class (and of a peer's BatchReply and
// Confirm), defined once for the party (package service) and the client.
//
// Each class says whether the application may use the same α again: only
// when no outcome that depends on it can have been observed by a host,
// i.e. when neither module opened a peer frame for the request. Once a
// module has opened the peer's frame, it has rebuilt (α, β) and computed
// the pair tag, and whether the two sites' tags agree (delivery or
// refusal) is visible; on the keystream tier a host or the network can
// choose frame bit flips so that this outcome reveals one bit of α. Such
// a request is "spent": it is never submitted again, and the application
// must choose a fresh α — a fresh sharing of the same α is not enough,
// since host 0 knows its own share and each outcome on a re-sharing fixes
// one more bit.
//
// The decision is joint: the two sites may answer one id with different
// classes (e.g. party 1 opened party 0's frames and party 0 never got the
// reply); α may be used again only when both sites' classes allow it. A
// reply that never arrived (the stream or party went away) must be taken
// as spent.
const (
	ClassBadRequest  = "bad_request"        // the request is malformed; nothing moved
	ClassExhausted   = "resource_exhausted" // the party holds its most pending keys; nothing moved
	ClassMismatch    = "mismatch"           // the two sites' requests differ (found before any frame was opened)
	ClassPeer        = "peer"               // the peer site had no such request as the session ended
	ClassUnavailable = "unavailable"        // the stream or party is going away
	ClassTampered    = "tampered"           // the two modules' keys did not pair: frames or pair tags disagree
	ClassSpent       = "spent"              // the batch ended without keys after a module opened the peer's frames for it
	ClassUnmatched   = "unmatched"          // no request with this id reached the other site within --match-timeout
	ClassVoid        = "void"               // after a party restart the pair could not be completed; any share of it is void
	ClassDesync      = "desync"             // peer link: the sites disagree on a batch (not sent to applications)
	ClassInternal    = "internal"
)

// ClassInfo describes one error class.
type ClassInfo struct {
	Class string
	// AlphaReusable: the application may request a key for the same α
	// again (with the same or new shares), since no module opened a peer
	// frame for this request at this site.
	AlphaReusable bool
	Meaning       string
}

// Classes is the table of error classes; docs/api.md reproduces it.
var Classes = []ClassInfo{
	{ClassBadRequest, true, "malformed request, or an id already pending at this site; refused before it was queued"},
	{ClassExhausted, true, "the party holds its most pending keys (--max-pending); refused before it was queued"},
	{ClassMismatch, true, "the two sites' requests under this id differ; found by party 1 when it claims the batch, before either module opened a frame of it"},
	{ClassPeer, true, "the peer site had no request with this id while the peer session was ending; the batch was refused before party 1's module opened any frame"},
	{ClassUnavailable, true, "the stream or party went away while the request waited to be batched or matched (a request already opened fails spent instead)"},
	{ClassTampered, false, "the two modules' keys did not pair: their pair-tag digests differed, or a peer frame was refused after others were opened; no key delivered"},
	{ClassSpent, false, "the batch ended without delivery (session lost, timeout, peer refusal, module error) after a module had opened the peer's frames for it; no key delivered"},
	{ClassUnmatched, true, "no request with this id reached the other site within --match-timeout (or the other site's request for it expired unmatched); no module opened a frame for it, the other requests went on"},
	{ClassVoid, false, "a party restarted while the pair for this id was being delivered and it could not be completed at both sites (the restarted party's module no longer holds its share, or the pair tags disagree); any share of this id delivered at the other site is void and must be discarded"},
	{ClassDesync, true, "peer link only: the sites disagree on a batch header; never sent to applications"},
	{ClassInternal, false, "an unexpected failure; whether a frame was opened is unknown"},
}

// AlphaReusable reports whether an application may use the same α again
// after a reply of this error class at this site; false for a class it
// does not know. Both sites' classes must allow it.
func AlphaReusable(class string) bool {
	for _, c := range Classes {
		if c.Class == class {
			return c.AlphaReusable
		}
	}
	return false
}

// KnownClass reports whether class is one of Classes.
func KnownClass(class string) bool {
	for _, c := range Classes {
		if c.Class == class {
			return true
		}
	}
	return false
}
