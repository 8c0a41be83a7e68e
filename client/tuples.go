package client

import (
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Tuples builds a request for n preprocessing tuples of kind k over
// Z_2^ring (msg.CorrTriples, msg.CorrSquares or msg.CorrBits): both
// modules draw them fresh, under the request's whole description, and each
// site's reply carries only its own party's shares (Share.Corr: A, R, Z =
// a, b, c for triples; a, –, a² for squares; r, –, – for bits). Both sites
// send it with the same id.
func Tuples(id uint64, k msg.CorrKind, ring, n int) *pb.KeyRequest {
	return Correlation(id, msg.Correlation{Kind: k, Ring: ring, In: n, Out: 1})
}

// MatrixTriple builds a request for one fresh matrix triple over Z_2^ring:
// A (m×k), B (k×n) and C = A·B, each row-major (Share.Corr's A, R, Z).
func MatrixTriple(id uint64, ring, m, k, n int) *pb.KeyRequest {
	return Correlation(id, msg.Correlation{Kind: msg.CorrMatMul, Ring: ring, Out: m, In: k, W: n})
}
