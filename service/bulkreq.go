// A bulk run's module request, shared by its submission and by the
// expectation its resend after a restart sends with the re-collect.

package service

import "github.com/kord-fss/kord/module/msg"

// bulkOf is the module's bulk request of n keys of j0's shape, as the
// segment of a bulk run starting with j0 submits it (submitCalls; a
// resend's expectation, recollectSlab), without the own shares.
func bulkOf(j0 *job, n int) *msg.Bulk {
	s0 := j0.shares[0]
	b := &msg.Bulk{Mode: s0.Mode, Profile: s0.Profile, Type: s0.Type, InBits: s0.InBits, OutBits: s0.OutBits, N: n,
		DeriveBeta: s0.DeriveBeta, Beta: s0.Beta}
	if j0.group > 1 {
		// A payload vector: the segment is this one job.
		b.Group, b.Betas = j0.group, j0.item.Betas
	}
	return b
}

// appendBulkShares appends a bound job's own shares to b's (the caller
// wipes them once sent).
func appendBulkShares(b *msg.Bulk, j *job) {
	if j.group > 1 {
		b.AlphaShares = append(b.AlphaShares, j.shares[0].AlphaShare)
		b.BetaShares = append(b.BetaShares, j.betaVec...)
		return
	}
	for _, x := range j.shares {
		b.AlphaShares = append(b.AlphaShares, x.AlphaShare)
		b.BetaShares = append(b.BetaShares, x.BetaShare)
	}
}
