package mpspdz

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "write testdata/kat afresh")

// specHeader is the header as the spec writes it (docs/mpspdz.md).
const specHeader = "09000000000000005a325e363440000000"

// TestHeaderBytes: the header is the spec's 17 bytes, and a written file
// is that header, then 8 bytes per share, little-endian.
func TestHeaderBytes(t *testing.T) {
	if hex.EncodeToString(Header[:]) != specHeader {
		t.Fatalf("header % x, want %s", Header, specHeader)
	}
	dir := t.TempDir()
	w, err := Create(dir, Squares, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]uint64{1, 2, 0x0102030405060708, ^uint64(0)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]uint64{1}); err == nil {
		t.Fatal("half a square written")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "2-DR-64", "Squares-DR-P1"))
	if err != nil {
		t.Fatal(err)
	}
	want := specHeader + "0100000000000000" + "0200000000000000" + "0807060504030201" + "ffffffffffffffff"
	if hex.EncodeToString(b) != want {
		t.Fatalf("file %x\nwant %s", b, want)
	}
}

// TestFileNames: the spec's names, read back; other names are not ours.
func TestFileNames(t *testing.T) {
	m, err := Matrix(2, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		k    Kind
		p    int
		name string
		w    int
	}{{Triples, 0, "Triples-DR-P0", 3}, {Squares, 1, "Squares-DR-P1", 2}, {Bits, 0, "Bits-DR-P0", 1}, {m, 1, "Matrix-2x3x4-P1", 6 + 12 + 8}} {
		if got := Path("PD", c.k, c.p); got != filepath.Join("PD", "2-DR-64", c.name) {
			t.Errorf("%v: %s", c.k, got)
		}
		k, p, ok := ParseFileName(c.name)
		if !ok || k != c.k || p != c.p || k.Words() != c.w {
			t.Errorf("%s: %v %d %v (%d words)", c.name, k, p, ok, k.Words())
		}
	}
	for _, n := range []string{"Triples-DR-P2", "Triples-P0", "Matrix-02x3x4-P0", "Matrix-0x3x4-P0", "Matrix-2x3-P0", "Inputs-P0-0", "Bits-DR-P0.bak", "Matrix-65537x1x1-P0"} {
		if _, _, ok := ParseFileName(n); ok {
			t.Errorf("%s read as a preprocessing file", n)
		}
	}
	for _, s := range []string{"2x3", "2x3x4", "2x3x4:0", "2x3x4:-1", "0x1x1:3", "axbxc:1"} {
		if _, _, err := ParseMatrixSpec(s); err == nil {
			t.Errorf("--matrix %s accepted", s)
		}
	}
	if k, n, err := ParseMatrixSpec("5x6x7:9"); err != nil || k != (Kind{Name: "Matrix", M: 5, K: 6, N: 7}) || n != 9 {
		t.Errorf("5x6x7:9: %v %d %v", k, n, err)
	}
}

// TestParseStrict: every part of the header is checked, and a body that
// is not a whole number of tuples is refused, naming what is wrong.
func TestParseStrict(t *testing.T) {
	good := append(Header[:], make([]byte, 24*2)...)
	if s, err := Parse(good, Triples); err != nil || len(s) != 6 {
		t.Fatalf("good file: %v, %d shares", err, len(s))
	}
	for _, c := range []struct {
		at   int
		want string
	}{{0, "length field"}, {7, "length field"}, {9, "domain"}, {13, "ring bits"}, {16, "ring bits"}} {
		b := bytes.Clone(good)
		b[c.at] ^= 1
		if _, err := Parse(b, Triples); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("byte %d flipped: %v, want %q", c.at, err, c.want)
		}
	}
	for _, b := range [][]byte{good[:10], append(bytes.Clone(good), 0), good[:len(good)-8]} {
		if _, err := Parse(b, Triples); err == nil {
			t.Errorf("%d bytes accepted as triples", len(b))
		}
	}
	if _, err := Parse(good, Kind{Name: "Inputs"}); err == nil {
		t.Error("an unknown kind accepted")
	}
}

// TestRelations: dealt tuples of every kind open correctly; one share
// changed is found, naming the file and the tuple index.
func TestRelations(t *testing.T) {
	var seed [32]byte
	d, err := NewDealer(&seed)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := Matrix(3, 2, 4)
	for _, k := range []Kind{Triples, Squares, Bits, m} {
		s, err := d.Tuples(k, 50)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckAll(k, s[0], s[1]); err != nil {
			t.Fatalf("%v: %v", k, err)
		}
		dir := t.TempDir()
		for p := range Players {
			w, err := Create(dir, k, p, false)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(s[p]); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if rep, err := Verify(dir); err != nil || len(rep) != 2 || !rep[0].Checked || rep[0].Tuples != 50 {
			t.Fatalf("%v: %+v %v", k, rep, err)
		}
		// Change the last share of tuple 37 in player 1's file.
		path := Path(dir, k, 1)
		b, _ := os.ReadFile(path)
		off := HeaderSize + 8*(38*k.Words()-1)
		binary.LittleEndian.PutUint64(b[off:], binary.LittleEndian.Uint64(b[off:])+2)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err = Verify(dir)
		if err == nil || !strings.Contains(err.Error(), "tuple 37:") || !strings.Contains(err.Error(), k.FileName(0)) {
			t.Fatalf("%v: tampered tuple 37: %v", k, err)
		}
		// Only one player's file: header and size, no relation.
		os.Remove(Path(dir, k, 0))
		if rep, err := Verify(dir); err != nil || len(rep) != 1 || rep[0].Checked {
			t.Fatalf("%v: one player: %+v %v", k, rep, err)
		}
	}
}

// TestCreateRefusesOverwrite: an existing file is kept unless forced.
func TestCreateRefusesOverwrite(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, Bits, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]uint64{1})
	w.Close()
	if _, err := Create(dir, Bits, 0, false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("overwrite: %v", err)
	}
	if s, err := ReadFile(dir, Bits, 0); err != nil || len(s) != 1 {
		t.Fatalf("file after refused overwrite: %v %v", s, err)
	}
	w, err = Create(dir, Bits, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if s, err := ReadFile(dir, Bits, 0); err != nil || len(s) != 0 {
		t.Fatalf("forced: %v %v", s, err)
	}
}

// katKinds are the known-answer files' contents.
func katKinds() []Item {
	m, _ := Matrix(2, 2, 3)
	return []Item{{Triples, 3}, {Squares, 3}, {Bits, 5}, {m, 2}}
}

// Item is a kind and a count (tests).
type Item struct {
	K Kind
	N int
}

// TestKnownAnswer: the dealer with seed 00 01 … 1f writes exactly the files
// in testdata/kat, and verify accepts them.
func TestKnownAnswer(t *testing.T) {
	var seed [32]byte
	for i := range seed {
		seed[i] = byte(i)
	}
	d, err := NewDealer(&seed)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if *update {
		dir = filepath.Join("testdata", "kat")
	}
	for _, it := range katKinds() {
		s, err := d.Tuples(it.K, it.N)
		if err != nil {
			t.Fatal(err)
		}
		for p := range Players {
			w, err := Create(dir, it.K, p, *update)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(s[p])
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(Path(dir, it.K, p))
			want, err := os.ReadFile(Path(filepath.Join("testdata", "kat"), it.K, p))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: differs from testdata/kat (%v)", it.K.FileName(p), err)
			}
		}
	}
	rep, err := Verify(filepath.Join("testdata", "kat"))
	if err != nil || len(rep) != 8 {
		t.Fatalf("verify testdata/kat: %+v %v", rep, err)
	}
}

// FuzzParse: any bytes as any kind: no panic; what parses is exactly the
// header and its shares.
func FuzzParse(f *testing.F) {
	f.Add(append(Header[:], make([]byte, 24)...), uint8(0))
	f.Add(Header[:], uint8(3))
	f.Add([]byte{9, 0}, uint8(1))
	kinds := []Kind{Triples, Squares, Bits, {Name: "Matrix", M: 1, K: 2, N: 1}, {Name: "x"}}
	f.Fuzz(func(t *testing.T, b []byte, ki uint8) {
		k := kinds[int(ki)%len(kinds)]
		s, err := Parse(b, k)
		if err != nil {
			return
		}
		out := bytes.NewBuffer(nil)
		WriteHeader(out)
		for _, v := range s {
			binary.Write(out, binary.LittleEndian, v)
		}
		if !bytes.Equal(out.Bytes(), b) || len(s)%k.Words() != 0 {
			t.Fatalf("parsed %d shares that do not re-encode to the input", len(s))
		}
	})
}
