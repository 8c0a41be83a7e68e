package pir

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
)

// ErrKeyWidth reports a key whose input width is not the database's ℓ.
var ErrKeyWidth = errors.New("pir: key input width does not match the database")

// Engine answers batches of PIR queries over one database: one pass over
// the records serves every key in the batch.
//
// The pass is cache blocked. The records are cut into chunks of about
// chunkBytes; every key's DPF tree is evaluated once down to a frontier with
// one node per chunk, and each worker (one per core) takes a chunk, expands
// every key's subtree for it (the chunk's output bits, 128 per AES call),
// and folds the chunk's records into the per-key accumulators while they
// are in cache. Inside a chunk, every 64 records are turned into sixteen
// 16-entry tables (all XOR combinations of 4 consecutive records), so a key
// pays one table lookup per 4 records instead of one masked XOR per record.
type Engine struct {
	db      *DB
	workers int
}

// chunkBytes is the target size of one chunk of records (fits L2).
const chunkBytes = 256 << 10

// stripWords is the widest slice of a record (in 64-bit words) tabulated
// at once; wider records are processed in strips.
const stripWords = 16

// NewEngine returns an engine over db using workers goroutines (≤ 0: one
// per CPU).
func NewEngine(db *DB, workers int) *Engine {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return &Engine{db: db, workers: workers}
}

// DB returns the engine's database.
func (e *Engine) DB() *DB { return e.db }

// Answer returns, for each key, the XOR of the records x < Count whose
// output bit is set in the key's EvalAll. Every key must have the
// database's input width ℓ = DomainBits(Count).
func (e *Engine) Answer(keys []*fss.XorKey) ([][]byte, error) {
	db := e.db
	l := db.DomainBits()
	for i, k := range keys {
		if k.InBits() != l {
			return nil, fmt.Errorf("%w: key %d has ℓ = %d, the database (%d records) needs ℓ = %d", ErrKeyWidth, i, k.InBits(), db.Count, l)
		}
	}
	B := len(keys)
	S := db.RecordSize
	W := (S + 7) / 8
	answers := make([][]byte, B)
	if B == 0 {
		return answers, nil
	}
	nu := min(l, fss.XorLeafBits)
	d := l - nu
	perLeaf := 1 << uint(nu)
	// c: log2 of leaf words per chunk.
	c := 0
	for c < d && (perLeaf<<uint(c+1))*S <= chunkBytes {
		c++
	}
	// Leave at least 4 chunks per worker where the domain allows.
	for c > 0 && d-c < bits.Len(uint(4*e.workers-1)) {
		c--
	}
	f := d - c
	chunkRecs := perLeaf << uint(c)
	nChunks := (db.Count + chunkRecs - 1) / chunkRecs
	frontiers := make([][]fss.XorNode, B)
	for q, k := range keys {
		fr, err := k.Frontier(f)
		if err != nil {
			return nil, err
		}
		frontiers[q] = fr
	}
	sw := min(W, stripWords)
	accs := make([][]uint64, e.workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	for w := 0; w < e.workers; w++ {
		acc := make([]uint64, B*W)
		accs[w] = acc
		wg.Add(1)
		go func() {
			defer wg.Done()
			leafBits := make([][]prg.Block, B)
			for q := range leafBits {
				leafBits[q] = make([]prg.Block, 1<<uint(c))
			}
			table := make([]uint64, 256*sw)
			for {
				i := int(next.Add(1) - 1)
				if i >= nChunks {
					return
				}
				for q, k := range keys {
					if err := k.ExpandNode(&frontiers[q][i], leafBits[q]); err != nil {
						errOnce.Do(func() { firstErr = err })
						return
					}
				}
				base := i * chunkRecs
				end := min(base+chunkRecs, db.Count)
				e.scanChunk(acc, W, sw, table, leafBits, base, end)
			}
		}()
	}
	wg.Wait()
	for _, fr := range frontiers {
		clear(fr)
	}
	if firstErr != nil {
		return nil, firstErr
	}
	for q := range answers {
		a := make([]byte, W*8)
		for w := range W {
			var x uint64
			for _, acc := range accs {
				x ^= acc[q*W+w]
			}
			binary.LittleEndian.PutUint64(a[8*w:], x)
		}
		answers[q] = a[:S]
	}
	return answers, nil
}

// scanChunk folds records [base, end) into every key's accumulator.
func (e *Engine) scanChunk(acc []uint64, W, sw int, table []uint64, leafBits [][]prg.Block, base, end int) {
	data := e.db.data
	S := e.db.RecordSize
	for sub := base; sub < end; sub += 64 {
		n := min(64, end-sub)
		off := sub - base
		blk, half := off/128, (off/64)&1
		for s0 := 0; s0 < W; s0 += sw {
			m := min(sw, W-s0)
			if S == 16 {
				buildTables16(table[:512], data[sub*16:], n)
			} else {
				buildTables(table[:256*m], data, S, sub, n, s0, m)
			}
			if m == 2 {
				t := (*[512]uint64)(table[:512])
				for q, lb := range leafBits {
					word := binary.LittleEndian.Uint64(lb[blk][8*half:])
					a := acc[q*W+s0 : q*W+s0+2 : q*W+s0+2]
					a0, a1 := a[0], a[1]
					i0 := 0 + int(word>>0&15)*2
					a0 ^= t[i0&511]
					a1 ^= t[(i0+1)&511]
					i1 := 32 + int(word>>4&15)*2
					a0 ^= t[i1&511]
					a1 ^= t[(i1+1)&511]
					i2 := 64 + int(word>>8&15)*2
					a0 ^= t[i2&511]
					a1 ^= t[(i2+1)&511]
					i3 := 96 + int(word>>12&15)*2
					a0 ^= t[i3&511]
					a1 ^= t[(i3+1)&511]
					i4 := 128 + int(word>>16&15)*2
					a0 ^= t[i4&511]
					a1 ^= t[(i4+1)&511]
					i5 := 160 + int(word>>20&15)*2
					a0 ^= t[i5&511]
					a1 ^= t[(i5+1)&511]
					i6 := 192 + int(word>>24&15)*2
					a0 ^= t[i6&511]
					a1 ^= t[(i6+1)&511]
					i7 := 224 + int(word>>28&15)*2
					a0 ^= t[i7&511]
					a1 ^= t[(i7+1)&511]
					i8 := 256 + int(word>>32&15)*2
					a0 ^= t[i8&511]
					a1 ^= t[(i8+1)&511]
					i9 := 288 + int(word>>36&15)*2
					a0 ^= t[i9&511]
					a1 ^= t[(i9+1)&511]
					i10 := 320 + int(word>>40&15)*2
					a0 ^= t[i10&511]
					a1 ^= t[(i10+1)&511]
					i11 := 352 + int(word>>44&15)*2
					a0 ^= t[i11&511]
					a1 ^= t[(i11+1)&511]
					i12 := 384 + int(word>>48&15)*2
					a0 ^= t[i12&511]
					a1 ^= t[(i12+1)&511]
					i13 := 416 + int(word>>52&15)*2
					a0 ^= t[i13&511]
					a1 ^= t[(i13+1)&511]
					i14 := 448 + int(word>>56&15)*2
					a0 ^= t[i14&511]
					a1 ^= t[(i14+1)&511]
					i15 := 480 + int(word>>60&15)*2
					a0 ^= t[i15&511]
					a1 ^= t[(i15+1)&511]
					a[0], a[1] = a0, a1
				}
				continue
			}
			for q, lb := range leafBits {
				word := binary.LittleEndian.Uint64(lb[blk][8*half:])
				a := acc[q*W+s0 : q*W+s0+m]
				for g := 0; g < 16; g++ {
					idx := (g*16 + int(word>>(4*uint(g))&15)) * m
					row := table[idx : idx+m]
					for w := range a {
						a[w] ^= row[w]
					}
				}
			}
		}
	}
}

// buildTables fills table (16 groups × 16 entries × m words) for the n ≤ 64
// records starting at sub, words s0..s0+m-1: entry e of group g is the XOR
// of the records sub+4g+k for the bits k set in e. Records past n are zero.
func buildTables(table []uint64, data []byte, S, sub, n, s0, m int) {
	var zero [MaxRecordSize]byte
	for g := 0; g < 16; g++ {
		var rows [4][]byte
		for k := range rows {
			if r := 4*g + k; r < n {
				rows[k] = data[(sub+r)*S : (sub+r+1)*S]
			} else {
				rows[k] = zero[:S]
			}
		}
		tg := table[g*16*m : (g+1)*16*m]
		for w := 0; w < m; w++ {
			a, b := loadWord(rows[0], s0+w), loadWord(rows[1], s0+w)
			c, d := loadWord(rows[2], s0+w), loadWord(rows[3], s0+w)
			ab := a ^ b
			tg[w] = 0
			tg[m+w] = a
			tg[2*m+w] = b
			tg[3*m+w] = ab
			tg[4*m+w] = c
			tg[5*m+w] = a ^ c
			tg[6*m+w] = b ^ c
			tg[7*m+w] = ab ^ c
			for e := 0; e < 8; e++ {
				tg[(8+e)*m+w] = tg[e*m+w] ^ d
			}
		}
	}
}

// buildTables16 is buildTables for 16-byte records (m = 2), unrolled;
// data starts at the first record of the 64.
func buildTables16(table []uint64, data []byte, n int) {
	var r [8]uint64
	for g := 0; g < 16; g++ {
		if 4*g+4 <= n {
			row := data[64*g : 64*g+64]
			for i := range r {
				r[i] = binary.LittleEndian.Uint64(row[8*i:])
			}
		} else {
			for k := 0; k < 4; k++ {
				if 4*g+k < n {
					r[2*k] = binary.LittleEndian.Uint64(data[64*g+16*k:])
					r[2*k+1] = binary.LittleEndian.Uint64(data[64*g+16*k+8:])
				} else {
					r[2*k], r[2*k+1] = 0, 0
				}
			}
		}
		t := (*[32]uint64)(table[32*g : 32*g+32])
		t[0], t[1] = 0, 0
		t[2], t[3] = r[0], r[1]
		t[4], t[5] = r[2], r[3]
		t[6], t[7] = r[0]^r[2], r[1]^r[3]
		for i := 0; i < 8; i += 2 {
			t[8+i], t[9+i] = t[i]^r[4], t[i+1]^r[5]
		}
		for i := 0; i < 16; i += 2 {
			t[16+i], t[17+i] = t[i]^r[6], t[i+1]^r[7]
		}
	}
}

// loadWord reads 64-bit word w of a record, zero-extending a short tail.
func loadWord(row []byte, w int) uint64 {
	o := 8 * w
	if o+8 <= len(row) {
		return binary.LittleEndian.Uint64(row[o:])
	}
	var b [8]byte
	copy(b[:], row[o:])
	return binary.LittleEndian.Uint64(b[:])
}
