// Package pairing runs the one-time pairing of two modules: both contribute
// entropy (a nonce and ephemeral keys), they agree on a key by hybrid
// X25519 + a pluggable post-quantum KEM (ML-KEM-768 by default), bind it to
// the transcript, and authenticate each other by key confirmation under a
// pre-shared provisioning secret (the paper's model of attestation as
// pre-shared symmetric keys). The result is the channel secret K_ch.
//
// Party 0 initiates. The three messages, relayed by the hosts:
//
//	hello  (0→1): 'H' 1 ‖ len ‖ KEM name ‖ nonce0 32 ‖ X25519 pub0 32 ‖ len16 ‖ KEM encapsulation key
//	reply  (1→0): 'R' 1 ‖ nonce1 32 ‖ X25519 pub1 32 ‖ len16 ‖ KEM ciphertext ‖ confirm1 32
//	finish (0→1): 'F' 1 ‖ confirm0 32
//
// th = SHA-256("kord/v1/pair/transcript" ‖ hello ‖ reply without confirm1);
// K_ch = HKDF-SHA256(secret = ss_x25519 ‖ ss_kem, salt = provisioning
// secret, info = "kord/v1/pair/channel" ‖ th); confirm_b = HMAC-SHA256(
// HKDF-Expand(K_ch, "kord/v1/pair/confirm/b"), th). A party that does not
// hold the provisioning secret cannot produce a confirmation, and a
// relay that changes any byte changes th and so both K_ch and the tags.
package pairing

import (
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/kord-fss/kord/module/internal/kdf"
)

const (
	version   = 1
	nonceSize = 32
	pubSize   = 32
	tagSize   = 32
	// MinSecret is the shortest provisioning secret accepted.
	MinSecret = 16
)

// ErrRejected marks a pairing message that failed parsing or
// authentication; the pairing must restart.
var ErrRejected = errors.New("pairing: message rejected")

type step uint8

const (
	idle step = iota
	sentHello
	sentReply
	done
)

// State is one module's side of a pairing.
type State struct {
	party  int
	secret []byte
	kem    KEM
	rand   io.Reader
	step   step

	nonce  [nonceSize]byte
	x      *ecdh.PrivateKey
	dk     Decapsulator
	hello  []byte
	th     [32]byte
	kch    []byte
	expect [tagSize]byte // responder: the confirmation expected from party 0
}

// New starts a pairing state for party (0 initiates, 1 responds).
func New(party int, secret []byte, kem KEM, rand io.Reader) (*State, error) {
	if party != 0 && party != 1 {
		return nil, fmt.Errorf("pairing: party %d is not 0 or 1", party)
	}
	if len(secret) < MinSecret {
		return nil, fmt.Errorf("pairing: provisioning secret is %d bytes, want at least %d", len(secret), MinSecret)
	}
	if kem == nil || rand == nil {
		return nil, errors.New("pairing: KEM and randomness are required")
	}
	return &State{party: party, secret: append([]byte(nil), secret...), kem: kem, rand: rand}, nil
}

// Wipe clears every secret the state holds.
func (s *State) Wipe() {
	clear(s.secret)
	clear(s.nonce[:])
	clear(s.kch)
	clear(s.expect[:])
	s.x, s.dk = nil, nil
	s.step = idle
}

// x25519Key draws an ephemeral X25519 private key as 32 bytes of rand
// (RFC 7748 clamps them), so that a fixed entropy stream gives a fixed
// transcript (testdata/transcript.json); rand is crypto/rand in a module.
func x25519Key(rand io.Reader) (*ecdh.PrivateKey, error) {
	var b [32]byte
	defer clear(b[:])
	if _, err := io.ReadFull(rand, b[:]); err != nil {
		return nil, fmt.Errorf("pairing: X25519 key: %w", err)
	}
	k, err := ecdh.X25519().NewPrivateKey(b[:])
	if err != nil {
		return nil, fmt.Errorf("pairing: X25519 key: %w", err)
	}
	return k, nil
}

func rejected(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRejected, fmt.Sprintf(format, args...))
}

// Start returns party 0's hello.
func (s *State) Start() ([]byte, error) {
	if s.party != 0 {
		return nil, errors.New("pairing: only party 0 starts a pairing")
	}
	if s.step != idle {
		return nil, errors.New("pairing: already started")
	}
	if _, err := io.ReadFull(s.rand, s.nonce[:]); err != nil {
		return nil, fmt.Errorf("pairing: nonce: %w", err)
	}
	var err error
	if s.x, err = x25519Key(s.rand); err != nil {
		return nil, err
	}
	dk, ek, err := s.kem.GenerateKey(s.rand)
	if err != nil {
		return nil, err
	}
	s.dk = dk
	name := s.kem.Name()
	m := []byte{'H', version, byte(len(name))}
	m = append(m, name...)
	m = append(m, s.nonce[:]...)
	m = append(m, s.x.PublicKey().Bytes()...)
	m = binary.BigEndian.AppendUint16(m, uint16(len(ek)))
	m = append(m, ek...)
	s.hello = m
	s.step = sentHello
	return append([]byte(nil), m...), nil
}

// Step consumes the peer's message and returns the reply to relay (nil when
// none). When the pairing completes, Done reports true and Secret returns
// K_ch. A rejected message wipes the state.
func (s *State) Step(in []byte) ([]byte, error) {
	var out []byte
	var err error
	switch {
	case s.party == 1 && s.step == idle:
		out, err = s.respond(in)
	case s.party == 0 && s.step == sentHello:
		out, err = s.finish(in)
	case s.party == 1 && s.step == sentReply:
		err = s.confirm(in)
	default:
		return nil, rejected("unexpected message in this pairing state")
	}
	if err != nil {
		s.Wipe()
		return nil, err
	}
	return out, nil
}

// Done reports whether the pairing has completed.
func (s *State) Done() bool { return s.step == done }

// Secret returns a copy of K_ch once done.
func (s *State) Secret() ([]byte, error) {
	if s.step != done {
		return nil, errors.New("pairing: not complete")
	}
	return append([]byte(nil), s.kch...), nil
}

// reader walks a message, recording the first short read.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) take(n int) []byte {
	if r.bad || n < 0 || len(r.b) < n {
		r.bad = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u16() int {
	v := r.take(2)
	if v == nil {
		return -1
	}
	return int(binary.BigEndian.Uint16(v))
}

func (s *State) respond(hello []byte) ([]byte, error) {
	r := &reader{b: hello}
	hdr := r.take(3)
	if r.bad || hdr[0] != 'H' || hdr[1] != version {
		return nil, rejected("hello: bad type or version")
	}
	name := string(r.take(int(hdr[2])))
	nonce0 := r.take(nonceSize)
	pub0 := r.take(pubSize)
	ek := r.take(r.u16())
	if r.bad || len(r.b) != 0 {
		return nil, rejected("hello: bad length")
	}
	if name != s.kem.Name() {
		return nil, rejected("hello: KEM %q, this module is configured for %q", name, s.kem.Name())
	}
	_ = nonce0 // bound through the transcript
	peer, err := ecdh.X25519().NewPublicKey(pub0)
	if err != nil {
		return nil, rejected("hello: X25519 key")
	}
	if _, err := io.ReadFull(s.rand, s.nonce[:]); err != nil {
		return nil, fmt.Errorf("pairing: nonce: %w", err)
	}
	if s.x, err = x25519Key(s.rand); err != nil {
		return nil, err
	}
	ssX, err := s.x.ECDH(peer)
	if err != nil {
		return nil, rejected("hello: X25519 agreement")
	}
	defer clear(ssX)
	ssK, ct, err := s.kem.Encapsulate(s.rand, ek)
	if err != nil {
		return nil, rejected("hello: KEM encapsulation key")
	}
	defer clear(ssK)
	m := []byte{'R', version}
	m = append(m, s.nonce[:]...)
	m = append(m, s.x.PublicKey().Bytes()...)
	m = binary.BigEndian.AppendUint16(m, uint16(len(ct)))
	m = append(m, ct...)
	if err := s.agree(hello, m, ssX, ssK); err != nil {
		return nil, err
	}
	mine := s.tag(1)
	s.expect = s.tag(0)
	m = append(m, mine[:]...)
	s.step = sentReply
	return m, nil
}

func (s *State) finish(reply []byte) ([]byte, error) {
	r := &reader{b: reply}
	hdr := r.take(2)
	if r.bad || hdr[0] != 'R' || hdr[1] != version {
		return nil, rejected("reply: bad type or version")
	}
	r.take(nonceSize)
	pub1 := r.take(pubSize)
	ct := r.take(r.u16())
	body := len(reply) - len(r.b)
	tag := r.take(tagSize)
	if r.bad || len(r.b) != 0 {
		return nil, rejected("reply: bad length")
	}
	peer, err := ecdh.X25519().NewPublicKey(pub1)
	if err != nil {
		return nil, rejected("reply: X25519 key")
	}
	ssX, err := s.x.ECDH(peer)
	if err != nil {
		return nil, rejected("reply: X25519 agreement")
	}
	defer clear(ssX)
	ssK, err := s.dk.Decapsulate(ct)
	if err != nil {
		return nil, rejected("reply: KEM ciphertext")
	}
	defer clear(ssK)
	if err := s.agree(s.hello, reply[:body], ssX, ssK); err != nil {
		return nil, err
	}
	want := s.tag(1)
	if !hmac.Equal(want[:], tag) {
		return nil, rejected("reply: confirmation does not verify (wrong provisioning secret or altered transcript)")
	}
	mine := s.tag(0)
	s.step = done
	s.x, s.dk = nil, nil
	return append([]byte{'F', version}, mine[:]...), nil
}

func (s *State) confirm(fin []byte) error {
	if len(fin) != 2+tagSize || fin[0] != 'F' || fin[1] != version {
		return rejected("finish: bad type, version or length")
	}
	if !hmac.Equal(s.expect[:], fin[2:]) {
		return rejected("finish: confirmation does not verify (wrong provisioning secret or altered transcript)")
	}
	s.step = done
	s.x, s.dk = nil, nil
	return nil
}

// agree derives K_ch from both shared secrets, bound to the transcript.
func (s *State) agree(hello, replyBody, ssX, ssK []byte) error {
	h := sha256.New()
	h.Write([]byte("kord/v1/pair/transcript"))
	h.Write(hello)
	h.Write(replyBody)
	h.Sum(s.th[:0])
	ikm := append(append([]byte(nil), ssX...), ssK...)
	defer clear(ikm)
	k, err := hkdf.Key(sha256.New, ikm, s.secret, kdf.LabelChannel+string(s.th[:]), 32)
	if err != nil {
		return fmt.Errorf("pairing: deriving the channel secret: %w", err)
	}
	s.kch = k
	return nil
}

func (s *State) tag(party int) (t [tagSize]byte) {
	ck, err := hkdf.Expand(sha256.New, s.kch, kdf.LabelConfirm+string([]byte{byte('0' + party)}), 32)
	if err != nil {
		// HKDF-Expand only fails for over-long outputs; 32 bytes never is.
		return t
	}
	m := hmac.New(sha256.New, ck)
	m.Write(s.th[:])
	m.Sum(t[:0])
	clear(ck)
	return t
}
