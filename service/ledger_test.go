package service

import (
	"encoding/binary"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func testServed(id uint64) *served {
	s := &served{shape: shape{id: id, beta: 3, mode: 1, typ: 2, in: 16, out: 8, count: 1}, first: 100 + id, n: 1,
		slabFirst: 7, slabN: 9, class: ""}
	s.req[0], s.tags[31] = byte(id), 0xaa
	return s
}

// TestLedgerRestart: a first start over no file is not a restart; the
// same file opened again is, once (takeRestart); entries written before
// (with no fsync of their own) are read back; a memory-only ledger keeps
// nothing and never restarts.
func TestLedgerRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "party0.db")
	l, err := openLedger(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if l.takeRestart() {
		t.Fatal("a first start counted as a restart")
	}
	l.put([]*served{testServed(1), testServed(2)})
	l.answered([]uint64{2, 3}, ErrClassVoid)
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	l, err = openLedger(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	if !l.takeRestart() || l.takeRestart() {
		t.Fatal("a restart is taken exactly once")
	}
	if l.epoch != 2 {
		t.Errorf("epoch %d, want 2", l.epoch)
	}
	got := l.entries()
	want := testServed(1)
	if g := got[1]; g.shape != want.shape || g.req != want.req || g.tags != want.tags || g.first != want.first || g.n != 1 ||
		g.slabFirst != 7 || g.slabN != 9 || g.class != "" {
		t.Errorf("entry 1 read back as %+v", g)
	}
	if got[2].class != ErrClassVoid || got[3].class != ErrClassVoid || len(got) != 3 {
		t.Errorf("entries read back: %+v", got)
	}
	m, _ := openLedger("", slog.New(slog.DiscardHandler))
	m.put([]*served{testServed(1)})
	if m.takeRestart() || len(m.entries()) != 0 {
		t.Error("a memory-only ledger kept entries or restarted")
	}
}

// TestLedgerEvicts keeps the last ledgerCap ids, on disk too.
func TestLedgerEvicts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "party1.db")
	l, err := openLedger(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for b := range 3 {
		var ss []*served
		for i := range ledgerCap / 2 {
			ss = append(ss, testServed(uint64(b*ledgerCap/2+i+1)))
		}
		l.put(ss)
	}
	l.close()
	l, err = openLedger(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	got := l.entries()
	if len(got) != ledgerCap {
		t.Fatalf("%d entries, want %d", len(got), ledgerCap)
	}
	if _, ok := got[1]; ok {
		t.Error("the oldest id was kept")
	}
	if _, ok := got[uint64(3*ledgerCap/2)]; !ok {
		t.Error("the newest id was dropped")
	}
}

// TestLedgerOtherVersion: a state file of another format is refused with
// a message naming both versions and what to do.
func TestLedgerOtherVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "party0.db")
	l, err := openLedger(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	l.close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(ledgerMeta).Put(keyLVersion, binary.LittleEndian.AppendUint64(nil, 9))
	})
	db.Close()
	_, err = openLedger(path, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "format version 9") || !strings.Contains(err.Error(), "reads 1") {
		t.Fatalf("opening a version-9 file: %v", err)
	}
}

// FuzzDecodeServed: any bytes either decode to an entry whose encoding
// reads back the same, or are refused; never a panic.
func FuzzDecodeServed(f *testing.F) {
	f.Add(testServed(5).encode())
	s := testServed(6)
	s.vec, s.class = "G\x02\x01\x05", ErrClassSpent
	f.Add(s.encode())
	f.Add([]byte{ledgerVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeServed(b)
		if err != nil {
			return
		}
		s2, err := decodeServed(s.encode())
		if err != nil || *s2 != *s {
			t.Fatalf("decoded %+v, which does not read back from its encoding (%v)", s, err)
		}
	})
}
