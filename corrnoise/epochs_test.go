package corrnoise

import (
	"math"
	"strings"
	"testing"
)

// The dense optimum under fixed epochs, held to what it must be without
// the solver: closed forms, Denisov's fixed point at one participation, X
// itself checked densely (positive definite, its sensitivity by
// enumeration, its loss from a Gauss–Jordan inverse), the best BLT above
// it and the SVD bound below it.

// At b = 1 every step is one pattern, X is diagonal with trace 1 and
// tr(AᵀA X⁻¹) = Σ_t (n−t)/X_tt is least at X_tt ∝ √(n−t): the mean loss is
// (Σ_{m=1}^n √m)²/n. At b = n it is Denisov's one participation, whose
// own dual bound meets its loss.
func TestOptimalDenseEpochsClosedForms(t *testing.T) {
	for _, c := range []struct{ n, b int }{{2, 1}, {17, 1}, {100, 1}, {12, 12}, {40, 40}} {
		d, err := OptimalDenseEpochs(c.n, c.b)
		if err != nil {
			t.Fatal(err)
		}
		want := 0.0
		if c.b == 1 {
			for m := 1; m <= c.n; m++ {
				want += math.Sqrt(float64(m))
			}
			want *= want / float64(c.n)
		} else {
			o, err := OptimalDense(c.n)
			if err != nil {
				t.Fatal(err)
			}
			want = o.MeanLoss
			if o.LowerBound > o.MeanLoss*(1+1e-12) || o.LowerBound < o.MeanLoss*(1-1e-8) {
				t.Errorf("n=%d: OptimalDense's dual bound %v against its loss %v", c.n, o.LowerBound, o.MeanLoss)
			}
		}
		if !near(d.MeanLoss, want, 1e-9) || d.Participations != (c.n+c.b-1)/c.b {
			t.Errorf("n=%d b=%d: mean loss %v (k %d), want %v", c.n, c.b, d.MeanLoss, d.Participations, want)
		}
	}
}

func TestOptimalDenseEpochsAgainstDense(t *testing.T) {
	for _, c := range []struct{ n, b int }{{12, 3}, {12, 4}, {13, 4}, {24, 6}, {30, 10}, {40, 4}} {
		s := solveEpochs(c.n, c.b)
		if loss := denseMeanLoss(feasible(t, c.n, c.b, s.x)); !near(s.loss, loss, 1e-9) {
			t.Errorf("n=%d b=%d: mean loss %v, by the dense inverse %v", c.n, c.b, s.loss, loss)
		}
		blt := bestBLT(t, c.n, c.b, Mean)
		svd := svdBound(c.n) * float64(c.n) / float64(c.b)
		if s.loss > blt || s.loss < svd*(1-1e-12) || s.loss < s.bound*(1-1e-12) || s.bound < s.loss*(1-1e-9) {
			t.Errorf("n=%d b=%d: mean loss %v, want in [SVD bound %v, best BLT %v] and within 1e-9 of its dual bound %v",
				c.n, c.b, s.loss, svd, blt, s.bound)
		}
	}
}

// feasible returns the X a search reached (row-major) as a matrix, checked
// positive definite and of unit sensitivity over fixed epochs.
func feasible(t *testing.T, n, b int, flat []float64) [][]float64 {
	t.Helper()
	x := unflatten(flat, n)
	checkPositiveDefinite(t, n, b, x)
	checkEpochSensitivity(t, n, b, x)
	return x
}

// checkPositiveDefinite checks X's symmetry and least eigenvalue.
func checkPositiveDefinite(t *testing.T, n, b int, x [][]float64) {
	t.Helper()
	a := zeros(n)
	for i := range n {
		for j := range n {
			if x[i][j] != x[j][i] {
				t.Fatalf("n=%d b=%d: X not symmetric at %d,%d", n, b, i, j)
			}
			a[i][j] = x[i][j]
		}
	}
	jacobiEigen(a)
	for i := range n {
		if !(a[i][i] > 0) {
			t.Errorf("n=%d b=%d: X has eigenvalue %v", n, b, a[i][i])
		}
	}
}

// checkEpochSensitivity brackets the sensitivity² over the patterns of
// fixed epochs (the steps i, i+b, … of each i < b): for contributions u_j
// of norm at most 1, ‖Σ_j C_j u_j‖² = Σ_{i,j} X_ij u_i·u_j lies between
// Σ_{i,j} X_ij (every u_j alike, achievable) and Σ_{i,j} |X_ij| (over any
// subset too, the terms being non-negative), both over the pattern. The
// largest of each over the patterns must be 1.
func checkEpochSensitivity(t *testing.T, n, b int, x [][]float64) {
	t.Helper()
	low, high := 0.0, 0.0
	for i := range b {
		alike, abs := 0.0, 0.0
		for p := i; p < n; p += b {
			for q := i; q < n; q += b {
				alike += x[p][q]
				abs += math.Abs(x[p][q])
			}
		}
		low, high = math.Max(low, alike), math.Max(high, abs)
	}
	if low < 1-1e-9 || high > 1+1e-9 {
		t.Errorf("n=%d b=%d: sensitivity² between %v and %v, want 1", n, b, low, high)
	}
}

// denseMeanLoss returns tr(A X⁻¹ Aᵀ)/n, X⁻¹ by Gauss–Jordan elimination:
// row t of A sums the entries of X⁻¹ in rows and columns 0…t.
func denseMeanLoss(x [][]float64) float64 {
	n := len(x)
	inv := gaussJordan(x)
	total := 0.0
	for t := range n {
		for i := 0; i <= t; i++ {
			for j := 0; j <= t; j++ {
				total += inv[i][j]
			}
		}
	}
	return total / float64(n)
}

// gaussJordan inverts x with partial pivoting.
func gaussJordan(x [][]float64) [][]float64 {
	n := len(x)
	a := make([][]float64, n)
	for i := range a {
		a[i] = make([]float64, 2*n)
		copy(a[i], x[i])
		a[i][n+i] = 1
	}
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		a[c], a[p] = a[p], a[c]
		pivot := a[c][c]
		for j := range a[c] {
			a[c][j] /= pivot
		}
		for r := range n {
			if r != c && a[r][c] != 0 {
				f := a[r][c]
				for j := range a[r] {
					a[r][j] -= f * a[c][j]
				}
			}
		}
	}
	inv := zeros(n)
	for i := range n {
		copy(inv[i], a[i][n:])
	}
	return inv
}

// unflatten returns the row-major x as rows.
func unflatten(x []float64, n int) [][]float64 {
	m := zeros(n)
	for i := range n {
		copy(m[i], x[i*n:i*n+n])
	}
	return m
}

// Over every lower-triangular C of 4 steps in cycles of 2 (10 entries),
// its sensitivity bounded by Σ|X_ij| over each pattern (exact where X ≥ 0,
// and never below the truth), a Nelder–Mead search finds no loss below the
// dense optimum, and comes within 1e-6 of it: the optimum's structure
// (X_ij = 0 within a pattern) loses nothing.
func TestOptimalDenseEpochsAgainstSearch(t *testing.T) {
	const n, b = 4, 2
	d, err := OptimalDenseEpochs(n, b)
	if err != nil {
		t.Fatal(err)
	}
	loss := func(p []float64) float64 {
		c := zeros(n)
		k := 0
		for i := range n {
			for j := 0; j <= i; j++ {
				c[i][j] = p[k]
				k++
			}
		}
		x := gram(c)
		sens2 := 0.0
		for i := range b {
			s := 0.0
			for p := i; p < n; p += b {
				for q := i; q < n; q += b {
					s += math.Abs(x[p][q])
				}
			}
			sens2 = math.Max(sens2, s)
		}
		l := denseMeanLoss(x) * sens2
		if math.IsNaN(l) || l <= 0 {
			return math.Inf(1)
		}
		return l
	}
	best := math.Inf(1)
	for _, start := range [][]float64{{1, 0, 1, 0, 0, 1, 0, 0, 0, 1}, {1, 0.5, 1, 0.3, 0.5, 1, 0.2, 0.3, 0.5, 1}} {
		x, f := start, 0.0
		for range 20 {
			x, f = nelderMead(loss, x, 0.1, 4000)
		}
		best = math.Min(best, f)
	}
	t.Logf("search over C: %.12g, dense optimum %.12g", best, d.MeanLoss)
	if best < d.MeanLoss*(1-1e-9) || best > d.MeanLoss*(1+1e-6) {
		t.Errorf("search over C: %v, dense optimum %v", best, d.MeanLoss)
	}
}

func TestOptimalDenseEpochsBadInput(t *testing.T) {
	for _, c := range []struct {
		n, b int
		msg  string
	}{
		{0, 1, "number of steps must be at least 1"},
		{10, 0, "minimum separation must be in [1, 10]"},
		{10, 11, "minimum separation must be in [1, 10]"},
		{DenseSteps + 1, 1, "the dense optimum takes 1 to 120 steps, got 121"},
	} {
		if _, err := OptimalDenseEpochs(c.n, c.b); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("OptimalDenseEpochs(%d, %d): %v, want %q", c.n, c.b, err, c.msg)
		}
		if _, err := OptimalDenseEpochsMax(c.n, c.b); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("OptimalDenseEpochsMax(%d, %d): %v, want %q", c.n, c.b, err, c.msg)
		}
	}
}
