package privacy

import "math"

// The Poisson-subsampled Gaussian mechanism (Mironov, Talwar and Zhang
// 2019, "Rényi Differential Privacy of the Sampled Gaussian Mechanism"):
// each example joins the batch independently with probability q and the
// sum of the batch gets N(0, σ²) noise per unit of sensitivity. Under
// add/remove-one adjacency its RDP at order α is log(A_α)/(α-1) with
//
//	A_α = E_{z ~ N(0,σ²)} [(1 - q + q·L(z))^α],  L(z) = exp((2z-1)/(2σ²)).

// rdpPoisson returns the RDP at order alpha of one step of the
// Poisson-subsampled Gaussian with sampling rate q and noise multiplier
// sigma, as Opacus and dp_accounting define it; series selects how
// fractional orders are summed.
func rdpPoisson(q, sigma, alpha float64, series Series) float64 {
	switch {
	case q == 0:
		return 0
	case q == 1:
		return alpha / (2 * sigma * sigma)
	case alpha == math.Trunc(alpha):
		return logAPoissonInt(q, sigma, int(alpha)) / (alpha - 1)
	case series == MagnitudeSeries:
		return logAPoissonFracMagnitudes(q, sigma, alpha) / (alpha - 1)
	}
	return logAPoissonFrac(q, sigma, alpha) / (alpha - 1)
}

// logAPoissonInt returns log A_α for integer α >= 2 by the binomial
// expansion (Mironov et al. 2019, Section 3.3)
//
//	A_α = Σ_{k=0..α} C(α,k) (1-q)^(α-k) q^k exp((k²-k)/(2σ²)).
//
// Since Σ_k C(α,k) (1-q)^(α-k) q^k = 1, A_α - 1 is the same sum of
// positive terms with exp(·) replaced by expm1(·) (k = 0, 1 drop out);
// summing that and taking log1p keeps full relative precision when A_α is
// close to 1 (small q), where summing A_α itself would lose the digits of
// A_α - 1 to the leading 1.
func logAPoissonInt(q, sigma float64, alpha int) float64 {
	c := 1 / (2 * sigma * sigma)
	lq, l1q := math.Log(q), math.Log1p(-q)
	terms := make([]float64, 0, alpha-1)
	for k := 2; k <= alpha; k++ {
		kf := float64(k)
		terms = append(terms, logBinom(alpha, k)+kf*lq+float64(alpha-k)*l1q+logAbsExpm1((kf*kf-kf)*c))
	}
	return log1pExp(logSumExp(terms))
}

// logAPoissonFrac returns log A_α for fractional α by the two series of
// Mironov et al. 2019 (Section 3.3; Opacus' _compute_log_a_for_frac_alpha):
// A_α = A0 + A1, the integrals of the binomial series of (1 - q + qL)^α
// below and above z0 = σ² log(1/q - 1) + 1/2, where qL = 1 - q. With
// j = α - i,
//
//	A0 = Σ_i C(α,i) q^i (1-q)^j exp((i²-i)/(2σ²)) · erfc((i-z0)/(√2σ))/2
//	A1 = Σ_i C(α,i) q^j (1-q)^i exp((j²-j)/(2σ²)) · erfc((z0-j)/(√2σ))/2.
//
// The coefficients C(α,i) are positive up to i = ⌊α⌋+1 and alternate in
// sign after, and the tails decay only like i^(-α-2), so summing until
// the terms are negligible takes 10^5 terms for α near 1 and small σ.
// Instead the head (i <= ⌊α⌋+1) is summed term by term and each tail by
// Euler's transformation (see alternatingTail): completing the square,
// the magnitude of the i-th tail term of A0 is |C(α,i)| times
// erfcx((i-z0)/(√2σ)) times a constant, and that of A1 the same with
// erfcx((i-α+z0)/(√2σ)), erfcx(u) = e^(u²) erfc(u). For i > α+1,
// |C(α,i)| ∝ ∫ t^(i-α-1) (1-t)^α dt and erfcx(u0 + kd) =
// (2/√π) ∫ e^(-s²-2u0 s) (e^(-2ds))^k ds are moments of positive
// measures on [0, 1], and so is their product: each tail is an
// alternating series of a Hausdorff moment sequence.
func logAPoissonFrac(q, sigma, alpha float64) float64 {
	f := newFracSeries(q, sigma, alpha)
	n := int(alpha) + 2
	head0, head1 := make([]float64, n), make([]float64, n)
	for i := range n {
		head0[i], head1[i] = f.next()
	}
	tail0, tail1 := make([]float64, tailTerms), make([]float64, tailTerms)
	for k := range tailTerms {
		tail0[k], tail1[k] = f.next()
	}
	a0 := headMinusTail(logSumExp(head0), alternatingTail(tail0))
	a1 := headMinusTail(logSumExp(head1), alternatingTail(tail1))
	return logAdd(a0, a1)
}

// fracSeries yields the terms of A0 and A1 (see logAPoissonFrac) in turn.
type fracSeries struct {
	alpha, z0, lq, l1q, c, scale float64
	i                            int
	logBinom                     float64 // log|C(α, i)|
}

func newFracSeries(q, sigma, alpha float64) *fracSeries {
	return &fracSeries{
		alpha: alpha,
		z0:    sigma*sigma*math.Log(1/q-1) + 0.5,
		lq:    math.Log(q),
		l1q:   math.Log1p(-q),
		c:     1 / (2 * sigma * sigma),
		scale: 1 / (math.Sqrt2 * sigma),
	}
}

// next returns the logs of the magnitudes of the i-th terms of A0 and A1
// and moves to i+1. log|C(α, i)| is updated by the ratio
// |C(α, i+1)/C(α, i)| = |α-i|/(i+1) (its sign is that of α-i: the
// coefficients are positive up to i = ⌊α⌋+1 and alternate after).
func (f *fracSeries) next() (s0, s1 float64) {
	fi, j := float64(f.i), f.alpha-float64(f.i)
	e0 := logErfc((fi-f.z0)*f.scale) - math.Ln2
	e1 := logErfc((f.z0-j)*f.scale) - math.Ln2
	s0 = f.logBinom + fi*f.lq + j*f.l1q + (fi*fi-fi)*f.c + e0
	s1 = f.logBinom + j*f.lq + fi*f.l1q + (j*j-j)*f.c + e1
	f.logBinom += math.Log(math.Abs(j)) - math.Log(fi+1)
	f.i++
	return s0, s1
}

// headMinusTail returns log(e^head - e^tail). The difference is an
// integral of a positive function and the tail's first term is below the
// head's last, so the tail never reaches the head but by rounding; if it
// did, the head alone (an upper bound) is returned.
func headMinusTail(head, tail float64) float64 {
	if tail >= head {
		return head
	}
	return logSub(head, tail)
}

// tailTerms is how many terms of an alternating tail alternatingTail
// averages: the error is below 2^-(tailTerms-1) of the first term.
const tailTerms = 60

// alternatingTail returns log Σ_k (-1)^k c_k given log c_k for
// k < len(logs), where c is a Hausdorff moment sequence, c_k = ∫ t^k dμ
// on [0, 1]. It applies Euler's transformation by repeated averaging of
// the partial sums S_0 … S_(K-1) (Abramowitz & Stegun 3.6.27): the
// result, Σ_k C(K-1,k) S_k / 2^(K-1), exceeds the sum by
// ∫ t ((1-t)/2)^(K-1) / (1+t) dμ <= 2^-(K-1) c_0. Subtracted from a head
// larger than c_0, it understates A0 by less than 2e-18 of it, below
// float64 rounding.
func alternatingTail(logs []float64) float64 {
	if math.IsInf(logs[0], -1) {
		return logs[0]
	}
	sums := make([]float64, len(logs))
	s, sign := 0.0, 1.0
	for k, l := range logs {
		s += sign * math.Exp(l-logs[0])
		sums[k], sign = s, -sign
	}
	for n := len(sums) - 1; n > 0; n-- {
		for k := range n {
			sums[k] = (sums[k] + sums[k+1]) / 2
		}
	}
	return logs[0] + math.Log(sums[0])
}

// magnitudeMaxTerms is dp_accounting's _MAX_STEPS_LOG_A_FRAC.
const magnitudeMaxTerms = 1000

// logAPoissonFracMagnitudes returns the upper bound on log A_α that
// dp_accounting's _compute_log_a_frac computes since it sums the
// magnitudes of the terms of A0 and A1 (scipy's gammaln is log|Γ|):
// the sum of |terms|, stopped as it stops, once both terms decrease and
// are below e^-30 times the sum, and +Inf (the order is then useless) if
// that has not happened after 1000 terms.
func logAPoissonFracMagnitudes(q, sigma, alpha float64) float64 {
	f := newFracSeries(q, sigma, alpha)
	a0, a1 := math.Inf(-1), math.Inf(-1)
	last0, last1 := math.Inf(-1), math.Inf(-1)
	for range magnitudeMaxTerms {
		s0, s1 := f.next()
		a0, a1 = logAdd(a0, s0), logAdd(a1, s1)
		if s0 < last0 && s1 < last1 && max(s0, s1) < logAdd(a0, a1)-30 {
			return logAdd(a0, a1)
		}
		last0, last1 = s0, s1
	}
	return math.Inf(1)
}
