package provision

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 64; i++ {
		s := New()
		text, err := Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if len(text) != EncodedLen || !strings.HasPrefix(text, Prefix) {
			t.Fatalf("encoded %q: want %d characters starting %q", text, EncodedLen, Prefix)
		}
		if seen[text] {
			t.Fatal("New repeated a secret")
		}
		seen[text] = true
		for _, in := range []string{text, text + "\n", "  " + strings.ToUpper(text) + "\r\n"} {
			got, err := Parse([]byte(in))
			if err != nil || !bytes.Equal(got, s) {
				t.Fatalf("Parse(%q) = %x, %v; want %x", in, got, err, s)
			}
		}
	}
	if _, err := Encode(make([]byte, 16)); err == nil {
		t.Fatal("Encode took a 16-byte secret")
	}
}

// TestTypoCaught: every single-character substitution and every
// adjacent transposition of an encoded secret is refused, and no error
// repeats the input.
func TestTypoCaught(t *testing.T) {
	text, _ := Encode(New())
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	for i := len(Prefix); i < len(text); i++ {
		for _, c := range alphabet {
			if byte(c) == text[i] {
				continue
			}
			bad := text[:i] + string(c) + text[i+1:]
			_, err := Parse([]byte(bad))
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("substitution at %d accepted", i)
			}
			if strings.Contains(err.Error(), bad[len(Prefix):len(Prefix)+8]) {
				t.Fatalf("error repeats the input: %v", err)
			}
		}
		if i+1 < len(text) && text[i] != text[i+1] {
			bad := text[:i] + string(text[i+1]) + string(text[i]) + text[i+2:]
			if _, err := Parse([]byte(bad)); err == nil {
				t.Fatalf("transposition at %d accepted", i)
			}
		}
	}
}

func TestParseRefusesOtherForms(t *testing.T) {
	text, _ := Encode(New())
	for _, in := range []string{
		"",
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", // hex
		"correct horse battery staple",
		text[:len(text)-1],
		text + "a",
		"kordsec2-" + text[len(Prefix):],
		Prefix + strings.Repeat("1", EncodedLen-len(Prefix)), // '1' is not base32
	} {
		_, err := Parse([]byte(in))
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "kord secret new") {
			t.Errorf("Parse(%q) = %v; want ErrFormat naming `kord secret new`", in, err)
		}
	}
}

func TestReadPrivate(t *testing.T) {
	dir := t.TempDir()
	s := New()
	text, _ := Encode(s)
	good := filepath.Join(dir, "secret")
	if err := os.WriteFile(good, []byte(text+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSecretFile(good)
	if err != nil || !bytes.Equal(got, s) {
		t.Fatalf("ReadSecretFile: %x %v", got, err)
	}
	os.Chmod(good, 0o400)
	if _, err := ReadSecretFile(good); err != nil {
		t.Fatalf("mode 0400: %v", err)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o644, 0o660} {
		os.Chmod(good, mode)
		_, err := ReadSecretFile(good)
		if !errors.Is(err, ErrFileAccess) || !strings.Contains(err.Error(), "chmod 600") {
			t.Fatalf("mode %v: %v; want ErrFileAccess naming chmod 600", mode, err)
		}
	}
	os.Chmod(good, 0o600)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	if _, err := ReadSecretFile(link); !errors.Is(err, ErrFileAccess) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("symlink: %v; want refused as a symbolic link", err)
	}
	if _, err := ReadSecretFile(dir); !errors.Is(err, ErrFileAccess) {
		t.Fatalf("a directory: %v", err)
	}
	bad := filepath.Join(dir, "hex")
	os.WriteFile(bad, []byte("00112233445566778899aabbccddeeff\n"), 0o600)
	if _, err := ReadSecretFile(bad); !errors.Is(err, ErrFormat) || strings.Contains(err.Error(), "0011223344") {
		t.Fatalf("hex file: %v; want ErrFormat without the content", err)
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(dir, "other")
		os.WriteFile(other, []byte(text), 0o600)
		os.Chown(other, 1, 1)
		if _, err := ReadSecretFile(other); !errors.Is(err, ErrFileAccess) || !strings.Contains(err.Error(), "owned by uid 1") {
			t.Fatalf("file owned by uid 1: %v", err)
		}
	} else {
		t.Log("not root: the owner check is not exercised (cannot chown to another uid)")
	}
}

// FuzzParse: Parse never panics, accepts only what Encode writes (up to
// case and surrounding space), and never repeats its input in an error.
func FuzzParse(f *testing.F) {
	text, _ := Encode(make([]byte, Size))
	f.Add([]byte(text))
	f.Add([]byte(text[:20]))
	f.Add([]byte("00112233445566778899aabbccddeeff"))
	f.Add([]byte(Prefix + strings.Repeat("a", 58)))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := Parse(in)
		if err != nil {
			if s != nil {
				t.Fatal("a result with an error")
			}
			return
		}
		if len(s) != Size {
			t.Fatalf("%d bytes", len(s))
		}
		enc, _ := Encode(s)
		if got := strings.ToLower(strings.TrimSpace(string(in))); got != enc {
			t.Fatalf("accepted %q, which encodes as %q", in, enc)
		}
	})
}
