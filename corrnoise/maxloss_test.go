package corrnoise

import (
	"math"
	"testing"
)

// The max loss's optimum in closed form: at b = 1 the last prefix sum
// reads every step once, so its variance Σ 1/X_jj ≥ n² with Σ X_jj = 1
// (X diagonal), met by X = I/n; at n = b = 2, X = [1 x; x 1] gives the
// rows 1/(1−x²) and 2/(1+x), equal at x = ½: 4/3.
func TestOptimalDenseEpochsMaxClosedForms(t *testing.T) {
	for _, c := range []struct {
		n, b int
		want float64
	}{{2, 2, 4.0 / 3}, {2, 1, 4}, {17, 1, 289}, {100, 1, 10000}} {
		d, err := OptimalDenseEpochsMax(c.n, c.b)
		if err != nil {
			t.Fatal(err)
		}
		if d.Objective != Max || d.Loss() != d.MaxLoss || d.LowerBound > c.want*(1+1e-12) || d.MaxLoss < c.want*(1-1e-12) || d.MaxLoss > c.want*(1+maxLossGap*2) {
			t.Errorf("n=%d b=%d: %+v, want max loss %v between its bound and itself, within %g", c.n, c.b, d, c.want, maxLossGap*2)
		}
	}
}

// The X found: positive definite, of unit sensitivity over fixed epochs,
// its max loss recomputed by a dense inverse; below the best BLT's and the
// mean optimum's max loss, above the mean optimum's mean loss, and within
// the gap of its dual bound.
func TestOptimalDenseEpochsMaxAgainstDense(t *testing.T) {
	for _, c := range []struct{ n, b int }{{12, 3}, {13, 4}, {24, 24}, {30, 10}} {
		s := solveEpochsMax(c.n, c.b)
		if loss := denseMaxLoss(feasible(t, c.n, c.b, s.x)); !near(s.max, loss, 1e-9) {
			t.Errorf("n=%d b=%d: max loss %v, by the dense inverse %v", c.n, c.b, s.max, loss)
		}
		mean, blt := solveEpochs(c.n, c.b), bestBLT(t, c.n, c.b, Max)
		meanMax := denseMaxLoss(unflatten(mean.x, c.n))
		if s.max > blt || s.max > meanMax || s.max < mean.loss || s.bound > s.max || s.max-s.bound > 5e-4*s.max {
			t.Errorf("n=%d b=%d: max loss %v (bound %v), want at most the best BLT's %v and the mean optimum's %v, at least its mean %v, within 5e-4 of the bound",
				c.n, c.b, s.max, s.bound, blt, meanMax, mean.loss)
		}
	}
}

// denseMaxLoss returns max_t (A X⁻¹ Aᵀ)_tt, X⁻¹ by Gauss–Jordan
// elimination: row t of A sums the entries of X⁻¹ in rows and columns
// 0…t.
func denseMaxLoss(x [][]float64) float64 {
	inv := gaussJordan(x)
	worst, run := 0.0, 0.0
	for t := range x {
		for i := 0; i <= t; i++ { // the new row and column t, t counted once
			run += inv[t][i] + inv[i][t]
		}
		run -= inv[t][t]
		worst = math.Max(worst, run)
	}
	return worst
}

// bestBLT returns the least loss for o of the designs of 1 to 3 buffers.
func bestBLT(t *testing.T, n, b int, o Objective) float64 {
	t.Helper()
	best := math.Inf(1)
	for d := 1; d <= 3; d++ {
		m, err := Design(n, b, d, o)
		if err != nil {
			t.Fatal(err)
		}
		best = math.Min(best, m.Loss.Of(o))
	}
	return best
}
