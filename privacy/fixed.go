package privacy

import "math"

// Fixed-size batches sampled without replacement, under replace-one
// adjacency (Wang, Balle and Kasiviswanathan 2019, "Subsampled Rényi
// Differential Privacy and Analytical Moments Accountant", AISTATS;
// arXiv:1808.00087): each step draws a uniformly random subset of size
// m = qn of the n examples, and neighbouring datasets differ by replacing
// one example. The base mechanism is the Gaussian with noise multiplier σ
// relative to the replace-one sensitivity, whose RDP is ε(α) = α/(2σ²).
//
// For integer α >= 2, Theorem 9 of the paper with the tighter terms of its
// Theorem 27 for the Gaussian, as dp_accounting implements them
// (_compute_rdp_sample_wor_gaussian_int), bounds (α-1)·RDP by log A with
//
//	A = 1 + q² C(α,2) min(4 (e^ε(2) - 1), 2 e^ε(2))
//	      + Σ_{j=3..α} q^j C(α,j) min(4 √(M(2⌊j/2⌋) M(2⌈j/2⌉)), 2 e^((j-1) ε(j))),
//
// where M(k) = E[(L-1)^k] is the k-th central moment of the Gaussian's
// likelihood ratio L under the null (the forward difference Δ^k of
// i ↦ e^((i-1) ε(i)) at 0, which is how the paper writes it). Above order
// maxExactOrder dp_accounting drops the moment terms and keeps
// 2 e^((j-1) ε(j)) alone; so do we. Fractional orders interpolate
// (α-1)·RDP linearly between ⌊α⌋ and ⌈α⌉ (the paper's Corollary 10:
// the cumulant generating function is convex).

// maxExactOrder is the largest order whose bound uses the central moments,
// dp_accounting's max_alpha.
const maxExactOrder = 256

// fixedBound computes the bound for one q and σ, caching log A at each
// integer order and the central moments (fractional orders reuse both).
type fixedBound struct {
	q, sigma float64
	moments  *centralMoments
	logA     map[int]float64
}

func newFixedBound(q, sigma float64) *fixedBound {
	return &fixedBound{q: q, sigma: sigma, moments: newCentralMoments(sigma), logA: map[int]float64{}}
}

// rdp returns the RDP at order alpha of one step of the Gaussian
// mechanism on a batch of a fraction q sampled without replacement: the
// bound, or the Gaussian's own RDP α/(2σ²) where that is smaller.
// Subsampling never hurts: coupling the two datasets' batches by their
// index sets, each pair of outputs is the Gaussian on identical or
// replace-one neighbouring batches, and the Rényi divergence of two
// mixtures with the same weights is at most the largest over the pairs
// (it is jointly quasi-convex). dp_accounting returns the bound alone,
// which exceeds α/(2σ²) at the smallest orders once q reaches about 0.3
// (0.1 for σ = 0.3).
func (b *fixedBound) rdp(alpha float64) float64 {
	gaussian := alpha / (2 * b.sigma * b.sigma)
	switch {
	case b.q == 0:
		return 0
	case b.q == 1:
		return gaussian
	}
	lo := math.Floor(alpha)
	x := b.logAInt(int(lo))
	if alpha == lo {
		return min(x/(alpha-1), gaussian)
	}
	y := b.logAInt(int(lo) + 1)
	t := alpha - lo
	return min(((1-t)*x+t*y)/(alpha-1), gaussian)
}

// logAInt returns log A (see the top of this file) at integer order
// alpha; it is 0 at alpha = 1.
func (b *fixedBound) logAInt(alpha int) float64 {
	v, ok := b.logA[alpha]
	if !ok {
		v = logAFixedInt(b.q, b.sigma, alpha, b.moments)
		b.logA[alpha] = v
	}
	return v
}

// logAFixedInt returns log A at integer order alpha >= 1 (0 at 1), m
// holding the central moments for sigma. The leading 1 of A is kept
// apart (log1p) so that A - 1 keeps its digits when q is small.
func logAFixedInt(q, sigma float64, alpha int, m *centralMoments) float64 {
	if alpha < 2 {
		return 0
	}
	eps := func(a float64) float64 { return a / (2 * sigma * sigma) }
	lq := math.Log(q)
	terms := make([]float64, 0, alpha-1)
	terms = append(terms, 2*lq+logBinom(alpha, 2)+min(2*math.Ln2+logAbsExpm1(eps(2)), eps(2)+math.Ln2))
	for j := 3; j <= alpha; j++ {
		jf := float64(j)
		bound := math.Ln2 + (jf-1)*eps(jf)
		if alpha <= maxExactOrder {
			lo, hi := m.log(2*(j/2)), m.log(2*((j+1)/2))
			bound = min(bound, 2*math.Ln2+(lo+hi)/2)
		}
		terms = append(terms, jf*lq+logBinom(alpha, j)+bound)
	}
	return log1pExp(logSumExp(terms))
}
