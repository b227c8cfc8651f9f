package corrnoise

import (
	"errors"
	"math"
)

// Inverse returns the power-series inverse of c, as many coefficients as
// c has: the Toeplitz coefficients of the inverse of the lower-triangular
// Toeplitz matrix with coefficients c. c_0 must be finite and non-zero.
func Inverse(c []float64) ([]float64, error) {
	if len(c) == 0 {
		return nil, errors.New("corrnoise: no coefficients to invert")
	}
	if c[0] == 0 || math.IsNaN(c[0]) || math.IsInf(c[0], 0) {
		return nil, errors.New("corrnoise: the leading coefficient must be finite and non-zero, got " + formatFloat(c[0]))
	}
	r := make([]float64, len(c))
	r[0] = 1 / c[0]
	for m := 1; m < len(c); m++ {
		var s float64
		for i := 1; i <= m; i++ {
			s += c[i] * r[m-i]
		}
		r[m] = -s / c[0]
	}
	return r, nil
}

// Multiply returns the first n coefficients of the product of the power
// series a and b (the coefficients of the product of their Toeplitz
// matrices); a missing coefficient is 0.
func Multiply(a, b []float64, n int) []float64 {
	p := make([]float64, n)
	for i := 0; i < n && i < len(a); i++ {
		for j := 0; i+j < n && j < len(b); j++ {
			p[i+j] += a[i] * b[j]
		}
	}
	return p
}

// PrefixSums returns the running sums of c: the coefficients of c/(1−x),
// the Toeplitz coefficients of A·C for the all-ones lower triangle A.
func PrefixSums(c []float64) []float64 {
	p := make([]float64, len(c))
	var s float64
	for i, x := range c {
		s += x
		p[i] = s
	}
	return p
}

// padded returns the first n coefficients of c, 0 past its end.
func padded(c []float64, n int) []float64 {
	p := make([]float64, n)
	copy(p, c)
	return p
}
