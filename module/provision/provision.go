// Package provision holds the module's provisioning secret format and the
// careful reading of the secret files a module daemon is given.
//
// A provisioning secret is 32 random bytes, written as
//
//	kordsec1-<58 base32 characters>
//
// the base32 (RFC 4648, lower case, no padding) of the 32 bytes followed
// by a 4-byte checksum: the first 4 bytes of SHA-256("kordsec1" ‖ secret).
// The checksum catches a mistyped or truncated copy before pairing fails
// with a confirmation mismatch; it adds no secrecy. `kord secret new`
// makes one.
//
// Why the format is enforced: in pairing, one module confirms before it
// has authenticated the other, so whoever plays the peer obtains a value
// that lets them test guesses of the secret offline. A secret drawn from
// 256 random bits cannot be guessed; a password can. The module accepts
// only this format, so a secret is always generated, never chosen.
package provision

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
)

const (
	// Prefix starts every encoded provisioning secret.
	Prefix = "kordsec1-"
	// Size is the length of a provisioning secret in bytes.
	Size = 32
	// checkSize is the checksum's length in bytes.
	checkSize = 4
	// EncodedLen is the length of an encoded secret.
	EncodedLen = len(Prefix) + (8*(Size+checkSize)+4)/5
	// Help names the expected form and how to make one; errors end with it.
	Help = "want kordsec1-<58 base32 characters>, as written by `kord secret new --out FILE`"
)

// ErrFormat marks text that is not an encoded provisioning secret.
var ErrFormat = errors.New("provision: not a kord provisioning secret")

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

func checksum(secret []byte) []byte {
	h := sha256.New()
	h.Write([]byte("kordsec1"))
	h.Write(secret)
	return h.Sum(nil)[:checkSize]
}

// New returns a fresh secret from crypto/rand.
func New() []byte {
	s := make([]byte, Size)
	rand.Read(s) // never fails (crypto/rand panics instead)
	return s
}

// Encode writes secret (Size bytes) in the checked text form.
func Encode(secret []byte) (string, error) {
	if len(secret) != Size {
		return "", fmt.Errorf("provision: secret is %d bytes, want %d", len(secret), Size)
	}
	buf := append(append(make([]byte, 0, Size+checkSize), secret...), checksum(secret)...)
	defer clear(buf)
	return Prefix + strings.ToLower(b32.EncodeToString(buf)), nil
}

// Parse decodes an encoded secret. Surrounding white space (a file's final
// newline) is ignored and case does not matter. Errors never repeat the
// input.
func Parse(text []byte) ([]byte, error) {
	// ASCII case only: no Unicode folding may turn other text into the
	// alphabet.
	t := bytes.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, bytes.TrimSpace(text))
	defer clear(t)
	if len(t) != EncodedLen || !bytes.HasPrefix(t, []byte(Prefix)) {
		if len(t) > 0 && !bytes.HasPrefix(t, []byte("kordsec")) {
			return nil, fmt.Errorf("%w (a raw or hex secret is no longer accepted); %s", ErrFormat, Help)
		}
		return nil, fmt.Errorf("%w: %d characters; %s", ErrFormat, len(t), Help)
	}
	body := bytes.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' {
			return r - ('a' - 'A')
		}
		return r
	}, t[len(Prefix):])
	defer clear(body)
	buf := make([]byte, b32.DecodedLen(len(body)))
	n, err := b32.Decode(buf, body)
	if err != nil || n != Size+checkSize {
		clear(buf)
		return nil, fmt.Errorf("%w: not base32 (a character outside a-z, 2-7); %s", ErrFormat, Help)
	}
	// Only the canonical encoding: the last character's two spare bits
	// must be zero, so each secret has one text form.
	if b32.EncodeToString(buf[:n]) != string(body) {
		clear(buf)
		return nil, fmt.Errorf("%w: the last character is not one kord secret new writes (a mistyped copy?); %s", ErrFormat, Help)
	}
	secret, sum := buf[:Size], buf[Size:n]
	if subtle.ConstantTimeCompare(sum, checksum(secret)) != 1 {
		clear(buf)
		return nil, fmt.Errorf("%w: checksum mismatch (a character was mistyped or the copy is damaged); %s", ErrFormat, Help)
	}
	out := append([]byte(nil), secret...)
	clear(buf)
	return out, nil
}
