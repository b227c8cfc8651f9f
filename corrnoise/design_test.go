package corrnoise

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A design's figures are those of the dense matrices of the filter that
// runs: C⁻¹ from the rounded noise BLT, C its inverse, the sensitivity by
// brute force over every pattern, the error from B = A C⁻¹.
func TestDesignFiguresAgainstDense(t *testing.T) {
	for _, c := range []struct {
		n, b, d int
		o       Objective
	}{{24, 6, 2, Max}, {20, 20, 3, Mean}, {16, 3, 1, Max}} {
		m, err := Design(c.n, c.b, c.d, c.o)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		cinv := toeplitzMatrix(m.Noise.Coefficients(c.n), c.n)
		strategy := lowerInverse(cinv)
		allEqual, _ := bruteForce(gram(strategy), c.n, c.b)
		rows := rowNorms2(matMul(ones(c.n), cinv))
		mean := 0.0
		for _, r := range rows {
			mean += r / float64(c.n)
		}
		if !m.Loss.Exact || !near(m.Loss.Sensitivity*m.Loss.Sensitivity, allEqual, 1e-10) ||
			!near(m.Loss.MaxError, rows[c.n-1], 1e-10) || !near(m.Loss.MeanError, mean, 1e-10) {
			t.Errorf("%+v: %+v; dense sens² %v, max %v, mean %v", c, m.Loss, allEqual, rows[c.n-1], mean)
		}
		checkStrategyBLT(t, m, strategy)
	}
}

// checkStrategyBLT checks that the reported strategy BLT is the inverse
// of the noise filter that runs.
func checkStrategyBLT(t *testing.T, m Mechanism, strategy [][]float64) {
	t.Helper()
	r := m.Strategy.Coefficients(m.Steps)
	for i := range r {
		if !near(r[i], strategy[i][0], 1e-9) {
			t.Errorf("n=%d: strategy BLT coefficient %d = %v, dense inverse %v", m.Steps, i, r[i], strategy[i][0])
		}
	}
}

// The designer beats DP-SGD wherever an example takes part more than once
// and less than every step; at b = 1 nothing Toeplitz can beat it for the
// max error: the coefficient n of 1/(1−x)² = R(x)P(x) (R, P the prefix
// sums of C and C⁻¹) is Σ R_i P_{n−1−i} ≤ ‖R‖‖P‖ = sens·√maxerr.
func TestDesignAgainstDPSGD(t *testing.T) {
	for _, c := range []struct {
		n, b, d int
		o       Objective
	}{{100, 100, 1, Max}, {100, 10, 2, Max}, {200, 20, 3, Mean}, {500, 50, 4, Max}, {50, 1, 2, Max}} {
		m, err := Design(c.n, c.b, c.d, c.o)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		switch r := m.Ratio(); {
		case c.b > 1 && r >= 0.5:
			t.Errorf("%+v: ratio to DP-SGD %v, want well below 1", c, r)
		case c.b == 1 && r < 1-1e-9:
			t.Errorf("%+v: ratio to DP-SGD %v below the Cauchy–Schwarz bound 1", c, r)
		}
	}
}

// Under one participation the optimal Toeplitz strategy is close to the
// square root (1 − x)^{-1/2} (Fichtenberger, Henzinger & Upadhyay 2023;
// Dvijotham et al. 2024 find BLTs of a few buffers within a fraction of a
// percent of the best Toeplitz): four buffers come within 0.1% of it.
func TestDesignAgainstSquareRoot(t *testing.T) {
	for _, n := range []int{100, 1000} {
		m, err := Design(n, n, 4, Max)
		if err != nil {
			t.Fatal(err)
		}
		f := sqrtCoefficients(n)
		inv, _ := Inverse(f)
		l, _ := Evaluate(f, inv, n, n)
		if r := m.Loss.Max() / l.Max(); r > 1.001 {
			t.Errorf("n=%d: BLT max loss %v is %v times the square root's %v", n, m.Loss.Max(), r, l.Max())
		}
	}
}

func TestDesignDeterministic(t *testing.T) {
	a, errA := Design(300, 30, 3, Max)
	b, errB := Design(300, 30, 3, Max)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if d := cmp.Diff(a, b); d != "" {
		t.Errorf("two designs differ (-first +second):\n%s", d)
	}
}

func TestDesignErrors(t *testing.T) {
	for _, c := range []struct {
		n, b, d int
		o       Objective
		msg     string
	}{
		{0, 1, 1, Max, "number of steps must be at least 1, got 0"},
		{10, 0, 1, Max, "minimum separation must be in [1, 10]"},
		{10, 11, 1, Max, "got 11"},
		{10, 5, 0, Max, "at least one buffer"},
		{10, 5, 9, Max, "at most 8 buffers, got 9"},
		{10, 5, 1, Objective(7), "unknown objective Objective(7)"},
	} {
		if _, err := Design(c.n, c.b, c.d, c.o); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Design(%d, %d, %d, %v): got %v, want %q", c.n, c.b, c.d, c.o, err, c.msg)
		}
	}
	if _, err := ParseObjective("median"); err == nil || !strings.Contains(err.Error(), `unknown objective "median" (want max or mean)`) {
		t.Errorf("ParseObjective(median): %v", err)
	}
}

// n = 2 by a golden-section search over the one correlation ρ of X;
// larger n between the SVD lower bound (tr (AᵀA)^{1/2})²/n² (Li & Miklau
// 2013) and the best BLT.
func TestOptimalDense(t *testing.T) {
	d, err := OptimalDense(2)
	if err != nil {
		t.Fatal(err)
	}
	// X = [[1 ρ] [ρ 1]], G = [[2 1] [1 1]]: tr(G X⁻¹) = (3 − 2ρ)/(1 − ρ²).
	rho := goldenSection(func(r float64) float64 { return (3 - 2*r) / (1 - r*r) }, -0.99, 0.99)
	if want := (3 - 2*rho) / (1 - rho*rho) / 2; !near(d.MeanLoss, want, 1e-9) {
		t.Errorf("n=2: mean loss %v, golden section %v", d.MeanLoss, want)
	}
	for _, n := range []int{12, 40} {
		d, err := OptimalDense(n)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := Design(n, n, 3, Mean)
		if lb := svdBound(n); d.MeanLoss < lb*(1-1e-9) || d.MeanLoss > m.Loss.Mean() {
			t.Errorf("n=%d: dense mean loss %v outside [SVD bound %v, BLT %v]", n, d.MeanLoss, lb, m.Loss.Mean())
		}
	}
	if _, err := OptimalDense(DenseSteps + 1); err == nil {
		t.Errorf("OptimalDense(%d): no error", DenseSteps+1)
	}
}

// svdBound returns (Σ σ_i(A))²/n², σ_i the singular values of A.
func svdBound(n int) float64 {
	g := gram(ones(n))
	jacobiEigen(g)
	s := 0.0
	for i := range n {
		s += math.Sqrt(g[i][i])
	}
	return s * s / float64(n*n)
}

// goldenSection minimises the unimodal f on [a, b].
func goldenSection(f func(float64) float64, a, b float64) float64 {
	g := (math.Sqrt(5) - 1) / 2
	for b-a > 1e-12 {
		c, d := b-g*(b-a), a+g*(b-a)
		if f(c) < f(d) {
			b = d
		} else {
			a = c
		}
	}
	return (a + b) / 2
}
