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
	k, err := denseParticipations(n, b)
	if err != nil {
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
	maxLossPolish = 3000 // and in the polish
)

// solveEpochsMax runs the stages from the mean optimum, μ starting at a
// sixteenth of its max loss, then polishes the bound.
func solveEpochsMax(n, b int) epochSolution {
	e := epochs{n: n, b: b}
	x, it := lbfgs(e, e.start(), lbfgsIterations)
	e.enforce(x)
	best := epochSolution{max: math.Inf(1), iterations: it}
	var weights []float64 // the stage's whose bound is best
	e.mu = slices.Max(rowLosses(x, n)) / 16
	for range maxLossStages {
		x, it = lbfgs(e, x, maxLossStage)
		e.enforce(x)
		best.iterations += it
		loss := rowLosses(x, n)
		before := best.max
		best.keep(x, loss)
		if w, _ := softmax(loss, e.mu); best.raise(weighted(n, b, w).boundAt(x)) {
			weights = w
		}
		if best.max-best.bound <= maxLossGap*best.max {
			return best
		}
		if before-best.max < maxLossGap/10*best.max { // the max has settled: only the bound lags
			break
		}
		e.mu /= maxLossShrink
	}
	best.iterations += best.polish(n, b, weights)
	return best
}

// polish solves the mean problem weighted by n·w further from the best X
// (maxLossPolish iterations): its dual bound then nears the weighted
// problem's optimum, where a stage's, at an X that is optimal for its
// smooth maximum only, is below it. Its X is feasible too. With no
// weights (no stage's bound was finite) there is nothing to polish.
func (s *epochSolution) polish(n, b int, w []float64) int {
	if w == nil {
		return 0
	}
	e := weighted(n, b, w)
	x, it := lbfgs(e, slices.Clone(s.x), maxLossPolish)
	e.enforce(x)
	s.keep(x, rowLosses(x, n))
	s.raise(e.boundAt(x))
	return it
}

// keep makes x the solution if its max loss is the least yet.
func (s *epochSolution) keep(x, loss []float64) {
	if m := slices.Max(loss); m < s.max {
		s.max, s.loss, s.x = m, mean(loss), slices.Clone(x)
	}
}

// raise makes bound the bound if it is finite and the greatest yet, and
// says whether it did.
func (s *epochSolution) raise(bound float64) bool {
	if !(bound > s.bound) || math.IsInf(bound, 0) {
		return false
	}
	s.bound = bound
	return true
}

// weighted is the mean problem of n steps in cycles of b weighted by n·w_i
// on row i.
func weighted(n, b int, w []float64) epochs {
	return epochs{n: n, b: b, root: roots(float64(n), w)}
}

// roots returns √(c·w_i).
func roots(c float64, w []float64) []float64 {
	r := make([]float64, len(w))
	for i := range w {
		r[i] = math.Sqrt(c * w[i])
	}
	return r
}

// softmax returns p_i = exp(ℓ_i/μ)/Σ_j exp(ℓ_j/μ) and the smooth maximum
// μ log Σ_i exp(ℓ_i/μ), both computed from the largest ℓ.
func softmax(loss []float64, mu float64) (p []float64, smoothMax float64) {
	top := slices.Max(loss)
	p = make([]float64, len(loss))
	var sum float64
	for i, l := range loss {
		p[i] = math.Exp((l - top) / mu)
		sum += p[i]
	}
	scale(p, 1/sum)
	return p, top + mu*math.Log(sum)
}

// rowLosses returns the variance of each prefix sum, (A X⁻¹ Aᵀ)_ii: the
// squared norms of the columns of L⁻¹Aᵀ, X = LLᵀ. x is one the search
// accepted, positive definite; were it not, every loss is +Inf.
func rowLosses(x []float64, n int) []float64 {
	l, ok := cholesky(x, n)
	if !ok {
		loss := make([]float64, n)
		for i := range loss {
			loss[i] = math.Inf(1)
		}
		return loss
	}
	return columnSquares(runningSums(lowerInverseFlat(l, n), n), n)
}

// mean returns the mean of x.
func mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}
