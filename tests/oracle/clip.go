package oracle

import "math"

// This file is the privatization of the FiBeR paper's eqs. (2)-(3), before
// the Gaussian noise: each example's gradient u(ξ) = a·∇f(look; ξ) +
// (1−a)·∇f(θ_t; ξ) (or ∇f(θ_t; ξ) alone for an optimizer without a
// two-point observation) is clipped to L2 norm at most C, and the clipped
// gradients are summed and divided by the (expected) batch size B.
// Everything is float64.

// Mix returns u = a·look + (1−a)·cur, or cur itself (a copy) when look is
// nil.
func Mix(cur, look []float64, a float64) []float64 {
	u := make([]float64, len(cur))
	for i := range cur {
		if look == nil {
			u[i] = cur[i]
			continue
		}
		u[i] = a*look[i] + (1-a)*cur[i]
	}
	return u
}

// Norm is the L2 norm of u.
func Norm(u []float64) float64 {
	s := 0.0
	for _, x := range u {
		s += x * x
	}
	return math.Sqrt(s)
}

// ClipScale is min(1, C/‖u‖): the factor that clips u to norm at most C;
// 1 for u = 0.
func ClipScale(norm, c float64) float64 {
	if norm == 0 {
		return 1
	}
	return math.Min(1, c/norm)
}

// Clip returns u scaled to norm at most c.
func Clip(u []float64, c float64) []float64 {
	s := ClipScale(Norm(u), c)
	out := make([]float64, len(u))
	for i, x := range u {
		out[i] = s * x
	}
	return out
}

// ClippedMean is (1/b) Σ_ξ clip_C(u(ξ)) over the len(cur) examples given,
// each of n coordinates, u(ξ) the mix of cur[ξ] and look[ξ] (look nil:
// cur[ξ] alone), b the expected batch size: with a fixed batch size there
// are b examples and this is their mean; under Poisson sampling (each
// example joins with probability B/N) their number is random, possibly 0,
// and dividing by the expected B keeps the sensitivity C/B.
func ClippedMean(cur, look [][]float64, n int, a, c, b float64) []float64 {
	mean := make([]float64, n)
	for ex := range cur {
		var l []float64
		if look != nil {
			l = look[ex]
		}
		for i, x := range Clip(Mix(cur[ex], l, a), c) {
			mean[i] += x
		}
	}
	for i := range mean {
		mean[i] /= b
	}
	return mean
}

// MixedNorm is ‖a·look + (1−a)·cur‖ from the norms of look and cur and
// their inner product, as a ghost-clipping trainer computes it:
// sqrt(a²‖look‖² + 2a(1−a)⟨look, cur⟩ + (1−a)²‖cur‖²).
func MixedNorm(lookNorm, curNorm, dot, a float64) float64 {
	return math.Sqrt(math.Max(0, a*a*lookNorm*lookNorm+2*a*(1-a)*dot+(1-a)*(1-a)*curNorm*curNorm))
}
