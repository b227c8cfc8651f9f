package corrnoise

import (
	"math"
	"slices"
)

// OptimalDenseEpochsMax returns the factorization A = B C over n steps
// that minimises the max error — the largest variance of a prefix sum —
// at unit sensitivity, over every C, under fixed-epoch participation in
// cycles of b steps (OptimalDenseEpochs' schema and constraints).
//
// The search minimises the smooth maximum μ log Σ_i exp(ℓ_i(X)/μ) of the
// prefix sums' variances ℓ_i by the same L-BFGS as OptimalDenseEpochs,
// from its mean optimum, for μ falling by maxLossShrink a stage: its
// gradient is the mean loss's with row i of the workload weighted by
// p_i = n·softmax(ℓ/μ)_i. The certificate is that of the weighted mean:
// the max loss is at least Σ_i p_i ℓ_i / n for any weights p ≥ 0 with
// Σ p = n, so the dual bound of the weighted problem (epochs.bound) at the
// stage's weights bounds every C's max loss from below. Every X reached
// has unit sensitivity, so MaxLoss, the least max loss found, is
// achievable and LowerBound, the greatest bound, is below the optimum; the
// stages stop where they meet to maxLossGap relatively, or after
// maxLossStages. MeanLoss is the mean loss of the X of MaxLoss.
func OptimalDenseEpochsMax(n, b int) (Dense, error) {
	k, err := Participations(n, b)
	if err != nil {
		return Dense{}, err
	}
	if err := checkDenseSteps(n); err != nil {
		return Dense{}, err
	}
	s := solveEpochsMax(n, b)
	return Dense{Steps: n, MinSep: b, Participations: k, Objective: Max, MaxLoss: s.max, MeanLoss: s.loss, LowerBound: s.bound, Iterations: s.iterations}, nil
}

// The max search's settings (decision 133).
const (
	maxLossGap    = 1e-5
	maxLossStages = 24
	maxLossShrink = 4
	maxLossStage  = 1000 // iterations of L-BFGS in a stage, at most
)

// solveEpochsMax runs the stages from the mean optimum, μ starting at a
// sixteenth of its max loss.
func solveEpochsMax(n, b int) epochSolution {
	e := epochs{n: n, b: b}
	x, it := lbfgs(e, e.start(), lbfgsIterations)
	e.enforce(x)
	best := epochSolution{max: math.Inf(1), iterations: it}
	e.mu = slices.Max(rowLosses(x, n)) / 16
	for range maxLossStages {
		x, it = lbfgs(e, x, maxLossStage)
		e.enforce(x)
		best.iterations += it
		loss := rowLosses(x, n)
		if m := slices.Max(loss); m < best.max {
			best.max, best.loss, best.x = m, mean(loss), slices.Clone(x)
		}
		best.bound = math.Max(best.bound, weightedBound(n, b, x, softmax(loss, e.mu)))
		if best.max-best.bound <= maxLossGap*best.max {
			break
		}
		e.mu /= maxLossShrink
	}
	return best
}

// weightedBound is the dual bound of the mean loss weighted by n·w_i on
// row i, at x.
func weightedBound(n, b int, x, w []float64) float64 {
	e := epochs{n: n, b: b, root: make([]float64, n)}
	for i := range w {
		e.root[i] = math.Sqrt(float64(n) * w[i])
	}
	_, h, _ := e.evaluate(x)
	return e.bound(h)
}

// softmax returns exp(ℓ_i/μ)/Σ_j exp(ℓ_j/μ), computed from the largest ℓ.
func softmax(loss []float64, mu float64) []float64 {
	top := slices.Max(loss)
	w := make([]float64, len(loss))
	var sum float64
	for i, l := range loss {
		w[i] = math.Exp((l - top) / mu)
		sum += w[i]
	}
	scale(w, 1/sum)
	return w
}

// rowLosses returns the variance of each prefix sum, (A X⁻¹ Aᵀ)_ii: the
// squared norms of the columns of L⁻¹Aᵀ, X = LLᵀ, L⁻¹'s rows' running
// sums.
func rowLosses(x []float64, n int) []float64 {
	l, _ := cholesky(x, n)
	inv := lowerInverseFlat(l, n)
	loss := make([]float64, n)
	for i := range n {
		var run float64
		for j := range n {
			run += inv[i*n+j]
			loss[j] += run * run
		}
	}
	return loss
}

// mean returns the mean of x.
func mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}
