package corrnoise

import (
	"math"
	"strings"
	"testing"
)

// sqrtCoefficients returns the first n coefficients of (1 − x)^{-1/2},
// the square-root factorization of Fichtenberger, Henzinger & Upadhyay
// (2023) and Henzinger, Upadhyay & Upadhyay (2023).
func sqrtCoefficients(n int) []float64 {
	f := make([]float64, n)
	f[0] = 1
	for k := 1; k < n; k++ {
		f[k] = f[k-1] * (1 - 1/(2*float64(k)))
	}
	return f
}

// near says whether a and b agree to rel relative (or absolute near 0).
func near(a, b, rel float64) bool {
	return math.Abs(a-b) <= rel*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// strategies are the test's strategies: a BLT's, the square root's, and
// ones that are not non-increasing or not non-negative.
var strategies = []struct {
	name string
	c    []float64
}{
	{"blt", BLT{Decay: []float64{0.9, 0.3}, Weight: []float64{0.2, 0.3}}.Coefficients(8)},
	{"sqrt", sqrtCoefficients(8)},
	{"identity", []float64{1}},
	{"bumpy", []float64{1, 0.2, 0.7, 0.1, 0.4}},
	{"signed", []float64{1, -0.5, 0.3, -0.2, 0.6, 0.1}},
	{"rising", []float64{0.5, 1, 1.5}},
}

func TestInverseAgainstDense(t *testing.T) {
	for _, s := range strategies {
		n := 8
		r := padded(s.c, n)
		inv, err := Inverse(r)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		dense := lowerInverse(toeplitzMatrix(r, n))
		for i := range n {
			if !near(inv[i], dense[i][0], 1e-12) {
				t.Errorf("%s: inverse[%d] = %v, dense %v", s.name, i, inv[i], dense[i][0])
			}
		}
		for i, v := range Multiply(r, inv, n) {
			if want := b2f(i == 0); !near(v, want, 1e-12) {
				t.Errorf("%s: (c * c⁻¹)[%d] = %v, want %v", s.name, i, v, want)
			}
		}
	}
}

// b2f is 1 for true, 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func TestInverseErrors(t *testing.T) {
	for _, c := range []struct {
		c   []float64
		msg string
	}{
		{nil, "no coefficients"},
		{[]float64{0, 1}, "leading coefficient must be finite and non-zero, got 0"},
		{[]float64{math.NaN()}, "got NaN"},
	} {
		if _, err := Inverse(c.c); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Inverse(%v): got %v, want %q", c.c, err, c.msg)
		}
	}
}

func TestPrefixSums(t *testing.T) {
	c := []float64{1, -0.25, 0.5, 2}
	a := matMul(ones(4), toeplitzMatrix(c, 4))
	for i, p := range PrefixSums(c) {
		if !near(p, a[i][0], 1e-15) {
			t.Errorf("prefix %d = %v, dense A·C %v", i, p, a[i][0])
		}
	}
}
