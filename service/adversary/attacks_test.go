package adversary

// knownOpen: the two HIGH attacks of issue 32 are open on this code
// (forged recovery records, issue 33; correlations and confirmations on
// the peer's word, issue 32 item 2). While true, their fixed cases below
// skip with the attack's description when they find violations (as they
// should until the fixes land), and the random campaign leaves out the
// mutation classes that act through them (mutate.go's gate). Set it to
// false once branches recovery and corrbind are merged.
const knownOpen = true

const (
	recoveryAttack = "forged recovery records: the honest site re-delivers, for any id, the outputs at counters the peer's record names (HelloReply.recent / Witness.recent accepted at any handshake)"
	confirmAttack  = "delivery on the peer's word: party 1 delivers a held batch on Confirm{ok} (or a hello's delivered_through) although the pair tags disagreed"
)

// stallOpen: a peer that withholds a handshake message stalls the
// session with no deadline (party 0's handshake reads without one, and
// party 1 expires no request while no session is up), and party 1 holds
// an answered batch until a confirmation comes, with no deadline either.
// Found by this suite's campaign; while true the campaign leaves out
// withholding (drop, or a reorder with nothing after it) of handshake
// messages and, when party 1 is honest, of confirmations. Set it to false
// once those waits have deadlines.
const stallOpen = true

const stallFinding = "a withheld handshake message or confirmation stalls the honest party with no deadline (leader.handshake, follower.handshake and a held batch read without one)"

// stalls reports whether mutation kind on messages of type typ withholds
// a message the honest party waits for without a deadline (stallOpen).
func stalls(honest int, kind, typ string) bool {
	if !stallOpen || (kind != "drop" && kind != "reorder") {
		return false
	}
	switch typ {
	case "hello", "hello_reply", "witness", "sync_done":
		return true
	case "confirm":
		return honest == 1
	}
	return false
}
