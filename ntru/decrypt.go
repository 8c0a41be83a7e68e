package ntru

import "crypto/subtle"

// decTrace holds the intermediate values of one decryption.
type decTrace struct {
	bigA []uint16 // f·e mod q
	a    []int16  // f·e centred in [−1024, 1024)
	msg  []byte
	ok   bool
}

// decWork holds one decryption's buffers; they are reused through the
// set's pool, so a decryption allocates only what it returns and the hash
// streams. Every buffer is fully written before it is read.
type decWork struct {
	e, cR, rh    []uint16
	ci, mtrin    []uint8
	want         []uint8
	mbin         []byte
	eKron, rKron []uint64
	scratch      []uint64
}

func (p *params) getWork() *decWork {
	if w, ok := p.work.Get().(*decWork); ok {
		return w
	}
	n, m := p.n, kronWords(p.n)
	return &decWork{
		e: make([]uint16, n), cR: make([]uint16, n), rh: make([]uint16, n),
		ci: make([]uint8, n), mtrin: make([]uint8, n), want: make([]uint8, n),
		mbin:  make([]byte, p.mbinLen()),
		eKron: make([]uint64, m), rKron: make([]uint64, m),
		scratch: make([]uint64, kronScratchWords(m)),
	}
}

// Decrypt recovers the message from a ciphertext. Every failure, whatever
// its cause, returns ErrDecryption.
func (k *PrivateKey) Decrypt(ct []byte) ([]byte, error) {
	t := k.decrypt(ct)
	if t == nil || !t.ok {
		return nil, ErrDecryption
	}
	return t.msg, nil
}

// decrypt runs SVES decryption. All checks are folded into one flag that is
// inspected only at the end; the polynomial products are constant time.
func (k *PrivateKey) decrypt(ct []byte) *decTrace {
	pub := &k.pub
	p := pub.p
	n := p.n
	if len(ct) != p.ctLen() {
		return nil
	}
	w := p.getWork()
	defer p.work.Put(w)
	e := w.e
	bad := 0
	if !unpackBits(e, ct, qBits) {
		bad = 1
	}
	t := &decTrace{bigA: make([]uint16, n), a: make([]int16, n)}

	// a = f·e = e + 3·(F·e) mod q, centred.
	eKron, scratch := w.eKron, w.scratch
	packKron(eKron, e)
	ternaryMulKron(t.bigA, eKron, sumMod(e), k.fKron, scratch)
	ci := w.ci
	var cnt0, cnt1, cnt2 int
	for i := range t.bigA {
		A := (e[i] + 3*t.bigA[i]) & qMask
		t.bigA[i] = A
		a := int16(A) - int16((A>>10)&1)<<11
		t.a[i] = a
		c := uint32((int32(a) + 3*342) % 3)
		ci[i] = uint8(c)
		// Count by arithmetic, not by indexing with the secret trit.
		cnt0 += int((c - 1) >> 31) // 1 iff c = 0
		cnt1 += int(c & 1)
		cnt2 += int(c >> 1)
	}
	bad |= lessThan(cnt0, p.dm0) | lessThan(cnt1, p.dm0) | lessThan(cnt2, p.dm0)

	// cR = e − ci; the mask comes from cR mod 4.
	cR := w.cR
	for i := range cR {
		cR[i] = (e[i] - tritToQ(ci[i])) & qMask
	}
	mask := p.mask(packMod4(cR))
	mtrin := w.mtrin
	for i := range mtrin {
		mtrin[i] = subMod3(ci[i], mask[i])
	}

	// Trits back to Mbin = b ‖ len ‖ m ‖ padding.
	mbin := w.mbin
	bad |= tritsToBits(mbin, mtrin)
	bLen := p.db / 8
	b := mbin[:bLen]
	l := int(mbin[bLen])
	tooLong := lessThan(p.maxMsg, l)
	bad |= tooLong
	l &= tooLong - 1 // 0 when too long, so slicing stays in range
	msg := mbin[bLen+1 : bLen+1+l]

	// Re-encode (b, m): Mtrin must match exactly (this also checks the zero
	// padding and the trailing trits), and r·h must equal cR.
	want := w.want
	bitsToTrits(want, p.buildMbin(b, msg))
	bad |= 1 - subtle.ConstantTimeCompare(want, mtrin)
	_, rt := p.blindingIndices(pub.sData(msg, b))
	rh, rKron := w.rh, w.rKron
	packKronTernary(rKron, rt)
	ternaryMulKron(rh, pub.hKron, pub.hSum, rKron, scratch)
	var diff uint16
	for i := range rh {
		diff |= rh[i] ^ cR[i]
	}
	bad |= subtle.ConstantTimeEq(int32(diff), 0) ^ 1

	t.ok = bad == 0
	if t.ok {
		t.msg = append([]byte{}, msg...)
	}
	return t
}

// lessThan returns 1 if x < y and 0 otherwise, for 0 <= x, y < 2^31.
func lessThan(x, y int) int { return int(uint32(x-y) >> 31) }
