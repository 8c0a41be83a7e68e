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
	l.answered([]rid{{"", 2}, {"", 3}}, ErrClassVoid)
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
	if g := got[rid{"", 1}]; g.shape != want.shape || g.req != want.req || g.tags != want.tags || g.first != want.first || g.n != 1 ||
		g.slabFirst != 7 || g.slabN != 9 || g.class != "" {
		t.Errorf("entry 1 read back as %+v", g)
	}
	if got[rid{"", 2}].class != ErrClassVoid || got[rid{"", 3}].class != ErrClassVoid || len(got) != 3 {
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
	if _, ok := got[rid{"", 1}]; ok {
		t.Error("the oldest id was kept")
	}
	if _, ok := got[rid{"", uint64(3 * ledgerCap / 2)}]; !ok {
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
	if err == nil || !strings.Contains(err.Error(), "format version 9") || !strings.Contains(err.Error(), "reads 2") {
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
	a := testServed(7)
	a.app = "app-a"
	f.Add(a.encode())
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

// TestLedgerAppScoped: two applications' entries under one id are two
// entries, on disk too; an answer recorded for one leaves the other as it
// was (issue: recovery keyed by request id alone).
func TestLedgerAppScoped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "party1.db")
	l, err := openLedger(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	a, b := testServed(9), testServed(9)
	a.app, b.app, b.first = "app-a", "app-b", 500
	l.put([]*served{a, b})
	l.answered([]rid{{"app-b", 9}}, ErrClassVoid)
	l.close()
	l, err = openLedger(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	ga, okA := l.get(rid{"app-a", 9})
	gb, okB := l.get(rid{"app-b", 9})
	if !okA || ga.app != "app-a" || ga.first != a.first || ga.class != "" {
		t.Errorf("app-a's entry for id 9 read back as %+v (found %v)", ga, okA)
	}
	if !okB || gb.app != "app-b" || gb.class != ErrClassVoid {
		t.Errorf("app-b's entry for id 9 read back as %+v (found %v), want void", gb, okB)
	}
	if _, ok := l.get(rid{"", 9}); ok || len(l.entries()) != 2 {
		t.Errorf("entries: %+v", l.entries())
	}
}

// TestLedgerRefusesFormat1: a state file of format 1 (entries keyed by id
// alone) is refused with a message that says why and what to do.
func TestLedgerRefusesFormat1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "party0.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		m, err := tx.CreateBucket(ledgerMeta)
		if err != nil {
			return err
		}
		return m.Put(keyLVersion, binary.LittleEndian.AppendUint64(nil, 1))
	})
	db.Close()
	_, err = openLedger(path, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "format version 1") || !strings.Contains(err.Error(), "by id alone") ||
		!strings.Contains(err.Error(), "move the file away") {
		t.Fatalf("opening a format-1 file: %v", err)
	}
}

// BenchmarkLedgerPut is the state file's cost per delivered batch: one
// put of one entry (a bulk request) into a full ledger, evicting the
// oldest. Its CPU is what the party spends on bbolt per batch.
func BenchmarkLedgerPut(b *testing.B) {
	l, err := openLedger(filepath.Join(b.TempDir(), "party0.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer l.close()
	id := uint64(0)
	for range ledgerCap {
		id++
		l.put([]*served{testServed(id)})
	}
	b.ResetTimer()
	for b.Loop() {
		id++
		if !l.put([]*served{testServed(id)}) {
			b.Fatal("put refused")
		}
	}
}
