package fss

import "github.com/kord-fss/kord/internal/prg"

// Block is a 16-byte PRG block: a root seed given to the WithRoots
// functions, or a leaf of an XorKey's expansion. It is internal/prg's
// Block, named here so that code outside kord can name it.
type Block = prg.Block
