//go:build !unix

package store

import "io/fs"

// owner does not know file owners here (no uid): -1.
func owner(fs.FileInfo) int { return -1 }

// noFollow is 0 here: no O_NOFOLLOW. checkPath refuses a symbolic link
// before the open.
const noFollow = 0
