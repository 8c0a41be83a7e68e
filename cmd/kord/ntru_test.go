package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ntruKeys runs kord ntru keygen for set into dir and returns the paths.
func ntruKeys(t *testing.T, dir, set string) (pub, priv string) {
	t.Helper()
	pub, priv = filepath.Join(dir, set+".pub"), filepath.Join(dir, set+".priv")
	if _, stderr, code := runKord(t, "ntru", "keygen", "--set", set, "--pub", pub, "--priv", priv); code != 0 {
		t.Fatalf("keygen %s: exit %d: %s", set, code, stderr)
	}
	return pub, priv
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantBadInput checks exit status 2 and a single stderr line that starts
// with "kord: " and contains every one of words.
func wantBadInput(t *testing.T, what, stderr string, code int, words ...string) {
	t.Helper()
	if code != 2 {
		t.Errorf("%s: exit status %d, want 2 (stderr %q)", what, code, stderr)
	}
	msg := strings.TrimSuffix(stderr, "\n")
	if msg == "" || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "kord: ") {
		t.Errorf("%s: stderr %q, want one line starting with \"kord: \"", what, stderr)
	}
	for _, w := range words {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: stderr %q does not mention %q", what, msg, w)
		}
	}
}

func TestNtruCLIRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		set    string
		maxLen int
		ctLen  int
	}{{"ees1087ep1", 178, 1495}, {"ees1499ep1", 247, 2062}} {
		t.Run(tc.set, func(t *testing.T) {
			dir := t.TempDir()
			pub, priv := ntruKeys(t, dir, tc.set)
			for _, l := range []int{0, 32, tc.maxLen} {
				msg := make([]byte, l)
				for i := range msg {
					msg[i] = byte(7*i + l) // includes zero and 0xff-ish bytes
				}
				in := filepath.Join(dir, "msg")
				ct := filepath.Join(dir, "ct")
				out := filepath.Join(dir, "out")
				writeFile(t, in, msg)
				if _, stderr, code := runKord(t, "ntru", "encrypt", "--key", pub, "--in", in, "--out", ct); code != 0 {
					t.Fatalf("encrypt %d bytes: exit %d: %s", l, code, stderr)
				}
				c := readFile(t, ct)
				if len(c) != tc.ctLen {
					t.Fatalf("ciphertext %d bytes, want %d", len(c), tc.ctLen)
				}
				if bytes.Contains(c, msg) && l > 0 {
					t.Fatalf("ciphertext contains the %d-byte message", l)
				}
				if _, stderr, code := runKord(t, "ntru", "decrypt", "--key", priv, "--in", ct, "--out", out); code != 0 {
					t.Fatalf("decrypt %d bytes: exit %d: %s", l, code, stderr)
				}
				if got := readFile(t, out); !bytes.Equal(got, msg) {
					t.Fatalf("%d-byte round trip: got %d bytes %x", l, len(got), got)
				}
			}
		})
	}
}

func TestNtruCLIErrors(t *testing.T) {
	dir := t.TempDir()
	pub, priv := ntruKeys(t, dir, "ees1087ep1")
	path := func(name string) string { return filepath.Join(dir, name) }
	msg, ct, out := path("msg"), path("ct"), path("out")
	writeFile(t, msg, []byte("attack at dawn"))
	if _, stderr, code := runKord(t, "ntru", "encrypt", "--key", pub, "--in", msg, "--out", ct); code != 0 {
		t.Fatalf("encrypt: exit %d: %s", code, stderr)
	}

	_, stderr, code := runKord(t, "ntru", "keygen", "--set", "ees401ep1", "--pub", path("p"), "--priv", path("q"))
	wantBadInput(t, "unknown set", stderr, code, "ees401ep1")
	if _, err := os.Stat(path("p")); err == nil {
		t.Error("unknown set: a public key file was written")
	}

	_, stderr, code = runKord(t, "ntru", "encrypt", "--key", path("missing.pub"), "--in", msg, "--out", out)
	wantBadInput(t, "missing public key", stderr, code, "public key")
	_, stderr, code = runKord(t, "ntru", "decrypt", "--key", path("missing.priv"), "--in", ct, "--out", out)
	wantBadInput(t, "missing private key", stderr, code, "private key")

	// Garbled keys: truncated, a flipped tag, the other half of the pair.
	pubBlob, privBlob := readFile(t, pub), readFile(t, priv)
	garbled := map[string][]byte{
		"truncated": pubBlob[:len(pubBlob)/2],
		"bad tag":   append([]byte{0x7f}, pubBlob[1:]...),
		"private":   privBlob,
	}
	for name, blob := range garbled {
		writeFile(t, path("bad.pub"), blob)
		_, stderr, code = runKord(t, "ntru", "encrypt", "--key", path("bad.pub"), "--in", msg, "--out", out)
		wantBadInput(t, "garbled public key ("+name+")", stderr, code, "public key")
	}
	writeFile(t, path("bad.priv"), privBlob[:len(privBlob)-3])
	_, stderr, code = runKord(t, "ntru", "decrypt", "--key", path("bad.priv"), "--in", ct, "--out", out)
	wantBadInput(t, "truncated private key", stderr, code, "private key")
	_, stderr, code = runKord(t, "ntru", "decrypt", "--key", pub, "--in", ct, "--out", out)
	wantBadInput(t, "public key as private", stderr, code, "private key")

	writeFile(t, path("long"), make([]byte, 179))
	_, stderr, code = runKord(t, "ntru", "encrypt", "--key", pub, "--in", path("long"), "--out", out)
	wantBadInput(t, "message too long", stderr, code, "too long", "179", "178")
	if _, err := os.Stat(out); err == nil {
		t.Error("message too long: an output file was written")
	}

	c := readFile(t, ct)
	for _, i := range []int{0, len(c) / 2, len(c) - 1} {
		bad := append([]byte{}, c...)
		bad[i] ^= 0x01
		writeFile(t, path("bad.ct"), bad)
		_, stderr, code = runKord(t, "ntru", "decrypt", "--key", priv, "--in", path("bad.ct"), "--out", out)
		wantBadInput(t, "tampered ciphertext", stderr, code, "decryption failed")
	}
	writeFile(t, path("short.ct"), c[:len(c)-1])
	_, stderr, code = runKord(t, "ntru", "decrypt", "--key", priv, "--in", path("short.ct"), "--out", out)
	wantBadInput(t, "truncated ciphertext", stderr, code, "decryption failed")
	if _, err := os.Stat(out); err == nil {
		t.Error("failed decryption: an output file was written")
	}
}

// TestNtruCLIRefInterop decrypts the reference C implementation's
// maximum-length ciphertexts with its private key blobs, and encrypts under
// its public key blobs (data: ntru/testdata/refinterop, see its README).
func TestNtruCLIRefInterop(t *testing.T) {
	ref := filepath.Join("..", "..", "ntru", "testdata", "refinterop")
	for _, tc := range []struct {
		set    string
		maxLen int
	}{{"ees1087ep1", 178}, {"ees1499ep1", 247}} {
		t.Run(tc.set, func(t *testing.T) {
			dir := t.TempDir()
			pub := filepath.Join(ref, tc.set+".pub")
			priv := filepath.Join(ref, tc.set+".priv")
			ct := filepath.Join(ref, fmt.Sprintf("%s.ct%d", tc.set, tc.maxLen))
			want := readFile(t, filepath.Join(ref, fmt.Sprintf("%s.msg%d", tc.set, tc.maxLen)))
			out := filepath.Join(dir, "out")
			if _, stderr, code := runKord(t, "ntru", "decrypt", "--key", priv, "--in", ct, "--out", out); code != 0 {
				t.Fatalf("decrypt reference ciphertext: exit %d: %s", code, stderr)
			}
			if got := readFile(t, out); !bytes.Equal(got, want) {
				t.Fatalf("reference ciphertext decrypts to %d bytes %x, want %x", len(got), got, want)
			}
			kct := filepath.Join(dir, "ct")
			if _, stderr, code := runKord(t, "ntru", "encrypt", "--key", pub, "--in", out, "--out", kct); code != 0 {
				t.Fatalf("encrypt under reference key: exit %d: %s", code, stderr)
			}
			if _, stderr, code := runKord(t, "ntru", "decrypt", "--key", priv, "--in", kct, "--out", out); code != 0 {
				t.Fatalf("decrypt with reference key: exit %d: %s", code, stderr)
			}
			if got := readFile(t, out); !bytes.Equal(got, want) {
				t.Fatalf("round trip under the reference keys: got %x", got)
			}
		})
	}
}
