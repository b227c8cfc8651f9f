package corrnoise

import (
	"math"
	"strings"
	"testing"
)

// Every strategy, every n ≤ 8 and every b: the exact value is the brute
// force over every participation pattern of the dense CᵀC; the bound is
// at least every achievable value (signed contributions) and at least the
// exact value where CᵀC ≥ 0.
func TestSensitivityBruteForce(t *testing.T) {
	for _, s := range strategies {
		for n := 1; n <= 8; n++ {
			x := gram(toeplitzMatrix(s.c, n))
			for b := 1; b <= n; b++ {
				checkSensitivity(t, s.name, s.c, x, n, b)
			}
		}
	}
}

// checkSensitivity checks one strategy at n steps, separation b.
func checkSensitivity(t *testing.T, name string, c []float64, x [][]float64, n, b int) {
	t.Helper()
	got, gotExact, err := Sensitivity(c, n, b)
	if err != nil {
		t.Fatalf("%s n=%d b=%d: %v", name, n, b, err)
	}
	allEqual, signs := bruteForce(x, n, b)
	k := (n + b - 1) / b
	wantExact := k == 1 || monotone(padded(c, n))
	if gotExact != wantExact {
		t.Errorf("%s n=%d b=%d: exact = %v, want %v", name, n, b, gotExact, wantExact)
	}
	switch {
	case gotExact && !near(got*got, math.Max(allEqual, signs), 1e-12):
		t.Errorf("%s n=%d b=%d: sens² = %v, brute force %v", name, n, b, got*got, math.Max(allEqual, signs))
	case !gotExact && got*got < math.Max(allEqual, signs)*(1-1e-12):
		t.Errorf("%s n=%d b=%d: bound² %v below the achievable %v", name, n, b, got*got, math.Max(allEqual, signs))
	}
}

// monotone says whether c_0 ≥ c_1 ≥ … ≥ 0.
func monotone(c []float64) bool {
	for i := range c {
		if c[i] < 0 || i > 0 && c[i] > c[i-1] {
			return false
		}
	}
	return true
}

// The bound where the Gram matrix is too large for Algorithm 4 is the
// triangle inequality: at least the Gram bound, at most k‖c‖.
func TestSensitivityBoundLarge(t *testing.T) {
	c := []float64{1, -0.5, 0.25}
	n, b := 1000, 2 // n²k = 5e8 > boundBudget
	got, exact, err := Sensitivity(c, n, b)
	if err != nil || exact {
		t.Fatalf("got %v, exact %v, %v; want a bound", got, exact, err)
	}
	want := 0.0
	for j := 0; j < n; j += b { // ‖C_{:,j}‖: the column loses its tail past row n
		want += math.Sqrt(sumSquares(padded(c, n-j)))
	}
	if !near(got, want, 1e-12) {
		t.Errorf("bound %v, want the triangle inequality %v", got, want)
	}
	small, _, _ := Sensitivity(c, 200, 2)
	if small >= 100*math.Sqrt(1.3125) {
		t.Errorf("the Gram bound at n = 200 (%v) is no better than the triangle inequality", small)
	}
}

func TestSensitivityErrors(t *testing.T) {
	for _, c := range []struct {
		c    []float64
		n, b int
		msg  string
	}{
		{[]float64{1}, 0, 1, "number of steps must be at least 1, got 0"},
		{[]float64{1}, 10, 0, "minimum separation must be in [1, 10]"},
		{[]float64{1}, 10, 11, "minimum separation must be in [1, 10] (the number of steps), got 11"},
		{[]float64{1, math.Inf(1)}, 4, 2, "coefficient 1 is +Inf"},
	} {
		if _, _, err := Sensitivity(c.c, c.n, c.b); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Sensitivity(%v, %d, %d): got %v, want %q", c.c, c.n, c.b, err, c.msg)
		}
	}
}

// Error is the row norms² of the dense B = A·C⁻¹.
func TestErrorAgainstDense(t *testing.T) {
	for _, s := range strategies {
		for _, n := range []int{1, 5, 12} {
			noise, err := Inverse(padded(s.c, n))
			if err != nil {
				t.Fatal(err)
			}
			rows := rowNorms2(matMul(ones(n), toeplitzMatrix(noise, n)))
			wantMax, wantMean := 0.0, 0.0
			for _, r := range rows {
				wantMax = math.Max(wantMax, r)
				wantMean += r / float64(n)
			}
			gotMax, gotMean := Error(noise, n)
			if !near(gotMax, wantMax, 1e-12) || !near(gotMean, wantMean, 1e-12) {
				t.Errorf("%s n=%d: Error = %v, %v; dense %v, %v", s.name, n, gotMax, gotMean, wantMax, wantMean)
			}
		}
	}
}

// DP-SGD: C = I, so sens² = k, the prefix sum of t+1 noises has variance
// t+1.
func TestDPSGD(t *testing.T) {
	for _, c := range []struct{ n, b int }{{1, 1}, {10, 1}, {10, 3}, {100, 10}, {100, 100}} {
		l, err := DPSGD(c.n, c.b)
		if err != nil {
			t.Fatal(err)
		}
		k := float64((c.n + c.b - 1) / c.b)
		n := float64(c.n)
		if !l.Exact || !near(l.Max(), k*n, 1e-12) || !near(l.Mean(), k*(n+1)/2, 1e-12) {
			t.Errorf("n=%d b=%d: %+v, max %v, mean %v; want k n = %v, k (n+1)/2 = %v", c.n, c.b, l, l.Max(), l.Mean(), k*n, k*(n+1)/2)
		}
	}
}
