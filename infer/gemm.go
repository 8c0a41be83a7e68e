package infer

// Fast linear layers: a stride-1 unpadded convolution as im2col and a
// matrix product, in uint32 words when ℓ ≤ 32 (the ring is a quotient of
// Z_{2^32}, so the low ℓ bits are the same and the words move half the
// bytes) and uint64 otherwise. The product is a dot-product kernel over
// row-major operands, four output rows by two output columns at a time,
// so that each loaded word feeds two or four multiply-adds and the eight
// sums stay in registers. apply (ref.go) is the plain loop it must equal
// (TestApplyFast); BenchmarkConv compares the two.

// word is a ring word type.
type word interface{ ~uint32 | ~uint64 }

// applyFast adds the bilinear map of a linear layer (FC or stride-1 Conv)
// of w and x into y, correct mod 2^ring (callers mask to ring bits).
func applyFast(l *Layer, in Shape, w, x, y []uint64, ring int) {
	if l.Kind != FC && l.Kind != Conv {
		apply(l, in, w, x, y)
		return
	}
	if ring <= 32 {
		w32, x32 := narrow(w), narrow(x)
		y32 := make([]uint32, len(y))
		linearGEMM(l, in, w32, x32, y32)
		for i, v := range y32 {
			y[i] += uint64(v)
		}
		return
	}
	linearGEMM(l, in, w, x, y)
}

func narrow(v []uint64) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = uint32(x)
	}
	return out
}

// linearGEMM adds L(w, x) into y.
func linearGEMM[T word](l *Layer, in Shape, w, x, y []T) {
	if l.Kind == FC {
		gemmNT(w, x, y, l.Out, 1, l.In)
		return
	}
	k := l.K
	oh, ow := in.H-k+1, in.W-k+1
	kd := l.In * k * k
	np := oh * ow
	// colT[p][(ci·k+ky)·k+kx] = x[ci][oy+ky][ox+kx], p = oy·ow+ox
	col := make([]T, np*kd)
	for oy := 0; oy < oh; oy++ {
		for ox := 0; ox < ow; ox++ {
			dst := col[(oy*ow+ox)*kd : (oy*ow+ox+1)*kd]
			j := 0
			for ci := 0; ci < l.In; ci++ {
				base := ci*in.H*in.W + oy*in.W + ox
				for ky := 0; ky < k; ky++ {
					copy(dst[j:j+k], x[base+ky*in.W:base+ky*in.W+k])
					j += k
				}
			}
		}
	}
	gemmNT(w, col, y, l.Out, np, kd)
}

// gemmNT adds A·Bᵀ into C: A is m×kd, B is n×kd, C is m×n, all row-major.
func gemmNT[T word](a, b, c []T, m, n, kd int) {
	i := 0
	for ; i+4 <= m; i += 4 {
		a0, a1, a2, a3 := a[i*kd:(i+1)*kd], a[(i+1)*kd:(i+2)*kd], a[(i+2)*kd:(i+3)*kd], a[(i+3)*kd:(i+4)*kd]
		j := 0
		for ; j+2 <= n; j += 2 {
			b0, b1 := b[j*kd:(j+1)*kd], b[(j+1)*kd:(j+2)*kd]
			var s00, s01, s10, s11, s20, s21, s30, s31 T
			a1, a2, a3, b0, b1 := a1[:len(a0)], a2[:len(a0)], a3[:len(a0)], b0[:len(a0)], b1[:len(a0)]
			for t, w0 := range a0 {
				x0, x1 := b0[t], b1[t]
				w1, w2, w3 := a1[t], a2[t], a3[t]
				s00 += w0 * x0
				s01 += w0 * x1
				s10 += w1 * x0
				s11 += w1 * x1
				s20 += w2 * x0
				s21 += w2 * x1
				s30 += w3 * x0
				s31 += w3 * x1
			}
			c[i*n+j] += s00
			c[i*n+j+1] += s01
			c[(i+1)*n+j] += s10
			c[(i+1)*n+j+1] += s11
			c[(i+2)*n+j] += s20
			c[(i+2)*n+j+1] += s21
			c[(i+3)*n+j] += s30
			c[(i+3)*n+j+1] += s31
		}
		for ; j < n; j++ {
			bj := b[j*kd : (j+1)*kd]
			for r, ar := range [4][]T{a0, a1, a2, a3} {
				c[(i+r)*n+j] += dot(ar, bj)
			}
		}
	}
	for ; i < m; i++ {
		ai := a[i*kd : (i+1)*kd]
		for j := 0; j < n; j++ {
			c[i*n+j] += dot(ai, b[j*kd:(j+1)*kd])
		}
	}
}

func dot[T word](a, b []T) T {
	b = b[:len(a)]
	var s T
	for t, v := range a {
		s += v * b[t]
	}
	return s
}
