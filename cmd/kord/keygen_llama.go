package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/kord-fss/kord/fss/llama"
)

// keygenLlama is `kord keygen --profile llama`: a LLAMA DCF pair as a
// dealer, each line exactly the bytes LLAMA's serializer writes for that
// party (party 0 = server first). Explicit roots are used as LLAMA uses
// them and must differ in bit 0; without them two random blocks are drawn
// and the control bits forced apart, as LLAMA's keyGenDCF does.
func keygenLlama(w io.Writer, typ string, inBits, outBits int, alphaS, betaS, root0, root1 string) error {
	if typ != "dcf" {
		return badInput("--profile llama has only --type dcf (LLAMA's FSS has no DPF), got %q", typ)
	}
	if inBits < 1 || inBits > 64 {
		return badInput("--in-bits %d is outside 1..64", inBits)
	}
	if outBits < 1 || outBits > 64 {
		return badInput("--out-bits %d is outside 1..64", outBits)
	}
	alpha, err := parseWord("--alpha", alphaS, inBits)
	if err != nil {
		return err
	}
	beta, err := parseWords("--beta", betaS, outBits)
	if err != nil {
		return err
	}
	var r0, r1 llama.Block
	switch {
	case root0 == "" && root1 == "":
		if _, err := rand.Read(r0[:]); err != nil {
			return err
		}
		if _, err := rand.Read(r1[:]); err != nil {
			return err
		}
		r0[0] = r0[0]&^1 | (r1[0]&1 ^ 1)
	case root0 == "" || root1 == "":
		return badInput("give both --root0 and --root1, or neither")
	default:
		if r0, err = parseRoot("--root0", root0); err != nil {
			return err
		}
		if r1, err = parseRoot("--root1", root1); err != nil {
			return err
		}
		if err := distinctRoots(r0, r1); err != nil {
			return err
		}
	}
	p := llama.Params{InBits: inBits, OutBits: outBits, Group: len(beta)}
	k0, k1, err := llama.Gen(p, alpha, beta, r0, r1)
	if err != nil {
		return badInput("%v", err)
	}
	fmt.Fprintln(w, hex.EncodeToString(k0))
	fmt.Fprintln(w, hex.EncodeToString(k1))
	return nil
}

// parseWords parses a comma-separated list of unsigned integers, each
// below 2^bits (a payload vector: --beta B1,B2,...); the error names the
// element.
func parseWords(flag, s string, bits int) ([]uint64, error) {
	var out []uint64
	for i, b := range strings.Split(s, ",") {
		v, err := parseWord(fmt.Sprintf("%s element %d", flag, i), b, bits)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// evalLlama is `kord eval --profile llama`: party's LLAMA key share raw at
// the point xS, its G output shares on one line.
func evalLlama(w io.Writer, raw []byte, xS string, inBits, outBits, party int) error {
	switch {
	case inBits < 1 || inBits > 64:
		return badInput("--profile llama needs --in-bits, 1..64 (a LLAMA key does not carry its shape), got %d", inBits)
	case outBits < 1 || outBits > 64:
		return badInput("--profile llama needs --out-bits, 1..64, got %d", outBits)
	case party != 0 && party != 1:
		return badInput("--profile llama needs --party 0 (the server's key) or 1 (the client's), got %d", party)
	}
	// (Bin+1)·(16 + E·G) bytes: G from the length.
	per, e := len(raw)/(inBits+1), llama.ElemBytes(outBits)
	if len(raw)%(inBits+1) != 0 || per <= 16 || (per-16)%e != 0 {
		return badInput("--key: %d bytes is no LLAMA key of Bin %d, Bout %d (any group): check --in-bits and --out-bits", len(raw), inBits, outBits)
	}
	k, err := llama.Parse(llama.Params{InBits: inBits, OutBits: outBits, Group: (per - 16) / e}, raw)
	if err != nil {
		return badInput("--key: %v", err)
	}
	x, err := parseWord("--x", xS, inBits)
	if err != nil {
		return err
	}
	ys, err := llama.Eval(party, k, x)
	if err != nil {
		return badInput("%v", err)
	}
	fmt.Fprintln(w, strings.Trim(fmt.Sprint(ys), "[]"))
	return nil
}
