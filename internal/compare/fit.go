package compare

import (
	"errors"
	"fmt"
	"math"
)

// fitSeconds fits seconds = A + B·ℓ + C·2^ℓ to the points by least
// squares (normal equations, 3×3). It needs three distinct widths.
func fitSeconds(block, link string, pts [][2]float64) (Fit, error) {
	f := Fit{Block: block, Link: link, Points: pts}
	distinct := map[float64]bool{}
	for _, p := range pts {
		distinct[p[0]] = true
	}
	if len(distinct) < 3 {
		return f, fmt.Errorf("compare: fitting %s on %s needs 3 measured widths, have %d (lower --bits or raise --max-measured)", block, link, len(distinct))
	}
	var m [3][4]float64
	for _, p := range pts {
		x := [3]float64{1, p[0], math.Exp2(p[0])}
		for i := range 3 {
			for j := range 3 {
				m[i][j] += x[i] * x[j]
			}
			m[i][3] += x[i] * p[1]
		}
	}
	// Gaussian elimination with partial pivoting.
	for col := range 3 {
		piv := col
		for r := col + 1; r < 3; r++ {
			if math.Abs(m[r][col]) > math.Abs(m[piv][col]) {
				piv = r
			}
		}
		m[col], m[piv] = m[piv], m[col]
		if m[col][col] == 0 {
			return f, errors.New("compare: singular fit")
		}
		for r := range 3 {
			if r == col {
				continue
			}
			k := m[r][col] / m[col][col]
			for c := col; c < 4; c++ {
				m[r][c] -= k * m[col][c]
			}
		}
	}
	f.A, f.B, f.C = m[0][3]/m[0][0], m[1][3]/m[1][1], m[2][3]/m[2][2]
	f.Formula = fmt.Sprintf("%s on %s: seconds/key = %.4g + %.4g·ℓ + %.4g·2^ℓ", block, link, f.A, f.B, f.C)
	return f, nil
}

// at evaluates the fit at ℓ.
func (f Fit) at(l int) float64 {
	return f.A + f.B*float64(l) + f.C*math.Exp2(float64(l))
}
