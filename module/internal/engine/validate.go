// Validation of submitted shares: every field is checked, and a bad request
// refused with the field named, before any counter moves.

package engine

import (
	"fmt"
	"strconv"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
)

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}

// checkTier refuses a tier the channel does not have, for submissions
// that carry frames (per-key shares and bound bulks alike).
func checkTier(t msg.Tier) error {
	switch t {
	case msg.Keystream, msg.MAC, msg.BatchMAC:
		return nil
	}
	return bad("Tier: unknown tier %d (want otp, mac or batchmac)", t)
}

// Validate checks one share request; the error names the field.
func Validate(i int, s msg.Share) error {
	if validShare(s) {
		return nil
	}
	return invalidShare(i, s)
}

// validShare is Validate's accepting path, without building the field name
// (a string per share) that only an error needs.
func validShare(s msg.Share) bool {
	if !validProfile(s.Profile, s.Type) {
		return false
	}
	switch s.Mode {
	case msg.Bound, msg.Consume:
		return (s.Type == fss.DPF || s.Type == fss.DCF) && s.InBits >= 1 && s.InBits <= 64 && s.OutBits >= 1 && s.OutBits <= 64 &&
			!s.DeriveBeta && s.Beta == 0 && s.AlphaShare&^prg.Mask(s.InBits) == 0 && s.BetaShare&^prg.Mask(s.OutBits) == 0
	case msg.Derived:
		return (s.Type == fss.DPF || s.Type == fss.DCF) && s.InBits >= 1 && s.InBits <= 64 && s.OutBits >= 1 && s.OutBits <= 64 &&
			s.AlphaShare == 0 && s.BetaShare == 0 && !(s.DeriveBeta && s.Beta != 0) && s.Beta&^prg.Mask(s.OutBits) == 0
	}
	return false
}

// validProfile reports whether profile pr makes keys of type t: kord-v1
// every type, llama only DCFs.
func validProfile(pr msg.Profile, t fss.Type) bool {
	return pr == msg.KordV1 || pr == msg.Llama && t == fss.DCF
}

// checkProfile says what is wrong with the profile of request field f.
func checkProfile(f string, pr msg.Profile, t fss.Type) error {
	switch {
	case pr != msg.KordV1 && pr != msg.Llama:
		return bad("%s.Profile: unknown key profile %d (want kord-v1 or llama)", f, pr)
	case pr == msg.Llama && t != fss.DCF:
		return bad("%s.Type: the llama profile has only DCF keys (LLAMA's FSS has no DPF), got %v", f, t)
	}
	return nil
}

// invalidShare says what is wrong with share i.
func invalidShare(i int, s msg.Share) error {
	f := "Shares[" + strconv.Itoa(i) + "]"
	switch s.Mode {
	case msg.Bound, msg.Derived, msg.Consume:
	default:
		return bad("%s.Mode: unknown mode %d (want bound, derived or consume)", f, s.Mode)
	}
	if s.Type != fss.DPF && s.Type != fss.DCF {
		return bad("%s.Type: unknown key type %d (want dpf or dcf)", f, s.Type)
	}
	if err := checkProfile(f, s.Profile, s.Type); err != nil {
		return err
	}
	if s.InBits < 1 || s.InBits > 64 {
		return bad("%s.InBits: %d is outside 1..64", f, s.InBits)
	}
	if s.OutBits < 1 || s.OutBits > 64 {
		return bad("%s.OutBits: %d is outside 1..64", f, s.OutBits)
	}
	if s.Mode == msg.Derived {
		if s.AlphaShare != 0 || s.BetaShare != 0 {
			return bad("%s.AlphaShare/BetaShare: must be zero in derived mode (the modules draw them)", f)
		}
		if s.DeriveBeta && s.Beta != 0 {
			return bad("%s.Beta: must be zero when DeriveBeta is set", f)
		}
		if s.Beta&^prg.Mask(s.OutBits) != 0 {
			return bad("%s.Beta: does not fit in %d output bits", f, s.OutBits)
		}
		return nil
	}
	if s.DeriveBeta || s.Beta != 0 {
		return bad("%s.DeriveBeta/Beta: only for derived mode", f)
	}
	if s.AlphaShare&^prg.Mask(s.InBits) != 0 {
		return bad("%s.AlphaShare: does not fit in %d input bits", f, s.InBits)
	}
	if s.BetaShare&^prg.Mask(s.OutBits) != 0 {
		return bad("%s.BetaShare: does not fit in %d output bits", f, s.OutBits)
	}
	return nil
}
