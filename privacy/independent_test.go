package privacy

import (
	"math"
	"math/big"
	"testing"
)

// Checks against independent derivations: the defining integrals of the
// Rényi divergences by quadrature, exact arithmetic, limits and
// inequalities that follow from the definitions. Each says why it holds.

// logNormalPDF is log φ(z) for the standard normal.
func logNormalPDF(z float64) float64 {
	return -z*z/2 - 0.5*math.Log(2*math.Pi)
}

// trapezoidLog returns log ∫ e^f(z) dz over [lo, hi] by the trapezoidal
// rule with step h (the integrands here are analytic and decay like
// Gaussians, so it converges geometrically in 1/h).
func trapezoidLog(f func(z float64) float64, lo, hi, h float64) float64 {
	var vals []float64
	for z := lo; z <= hi; z += h {
		vals = append(vals, f(z))
	}
	return math.Log(h) + logSumExp(vals)
}

// logExcess returns log((1+x)^α - 1 - αx), which is >= 0 for x > -1 and
// α > 1 (the convex function's excess over its tangent at 0): by the
// binomial series for |x| < 1/2, which has no cancellation to lose
// digits to, and directly (in log space) elsewhere.
func logExcess(alpha, x float64) float64 {
	if math.Abs(x) < 0.5 {
		sum, term := 0.0, alpha*x
		for k := 2; k < 90; k++ {
			term *= (alpha - float64(k-1)) / float64(k) * x
			sum += term
		}
		return math.Log(sum)
	}
	v := alpha * math.Log1p(x)
	if x > 0 {
		return v + math.Log(-math.Expm1(math.Log1p(alpha*x)-v))
	}
	return math.Log(math.Exp(v) - 1 - alpha*x)
}

// quadLogAPoisson returns log A_α of the Poisson-subsampled Gaussian by
// quadrature of its definition, A_α = E_{z~N(0,1)}[(1 + qX)^α] with
// X = L - 1 = expm1(z/σ - 1/(2σ²)). Since E[X] = 0, A_α - 1 is the
// integral of the nonnegative φ(z)·((1+qX)^α - 1 - αqX), which loses no
// digits when A_α is close to 1. The integrand is analytic in the strip
// |Im z| < πσ (1 + qX vanishes at Im z = πσ), so the step is a fraction
// of σ as well as of the unit width of φ.
func quadLogAPoisson(q, sigma, alpha float64) float64 {
	f := func(z float64) float64 {
		return logNormalPDF(z) + logExcess(alpha, q*math.Expm1(z/sigma-1/(2*sigma*sigma)))
	}
	h := min(0.02, sigma/20)
	return log1pExp(trapezoidLog(f, -15, 15+alpha/sigma, h))
}

// The series (integer and fractional orders) against the quadrature of
// the defining integral. The fractional series carries log A_α to an
// absolute ~1e-16 (its terms are O(1) and A_α ≈ 1), the integer sum of
// positive terms to a relative ~1e-15.
func TestPoissonMatchesQuadrature(t *testing.T) {
	for _, c := range []struct{ q, sigma, alpha float64 }{
		{0.01, 2.5, 1.5}, {0.04, 1.5, 3.9}, {0.3, 0.5, 1.1}, {0.001, 1, 2.5},
		{0.1, 1, 20.5}, {0.5, 2, 32.5}, {0.01, 10, 20}, {1e-3, 1, 2},
		{0.2, 0.8, 7}, {0.9, 3, 5.5}, {0.04, 1.5, 64}, {1e-4, 1, 1.01},
	} {
		got := rdpPoisson(c.q, c.sigma, c.alpha, ExactSeries) * (c.alpha - 1)
		want := quadLogAPoisson(c.q, c.sigma, c.alpha)
		if d := math.Abs(got - want); d > 1e-12*want+2e-16 {
			t.Errorf("q %v sigma %v order %v: log A = %.17g, quadrature %.17g (off by %.3g)", c.q, c.sigma, c.alpha, got, want, d)
		}
	}
}

// The magnitude series sums |terms| of the same series: never below the
// exact value but by what it leaves out when it stops (terms below e^-30,
// and an alternating tail beyond them, < 1e-13 in log A).
func TestMagnitudeSeriesBoundsExact(t *testing.T) {
	for _, q := range []float64{1e-3, 0.04, 0.3} {
		for _, sigma := range []float64{0.7, 1.5, 4} {
			for _, alpha := range []float64{1.1, 1.5, 2.5, 7.3} {
				exact := rdpPoisson(q, sigma, alpha, ExactSeries)
				mag := rdpPoisson(q, sigma, alpha, MagnitudeSeries)
				if (mag-exact)*(alpha-1) < -1e-13 {
					t.Errorf("q %v sigma %v order %v: magnitudes %v below exact %v", q, sigma, alpha, mag, exact)
				}
			}
		}
	}
}

// rdpOf is the RDP of one step of m at one order.
func rdpOf(t *testing.T, m Mechanism, alpha float64) float64 {
	t.Helper()
	r, err := m.RDP([]float64{alpha})
	if err != nil {
		t.Fatal(err)
	}
	return r[0]
}

// q -> 0. Expanding A = E[(1 + q(L-1))^α] = 1 + C(α,2) q² M(2) + O(q³)
// with M(2) = E[(L-1)²] = e^(1/σ²) - 1 gives RDP/q² -> α M(2)/2 for
// Poisson sampling. The Fixed bound is 1 + q² C(α,2) min(4 M(2),
// 2 e^(1/σ²)) + O(q³) at integer orders (ε(2) = 1/σ²), interpolated in
// (α-1)·RDP between ⌊α⌋ and ⌈α⌉. The O(q) remainder is below 1e-3 at
// q = 1e-5 for these σ and α.
func TestSmallSampleRateLimit(t *testing.T) {
	const q = 1e-5
	for _, sigma := range []float64{1, 2, 4} {
		m2 := math.Expm1(1 / (sigma * sigma))
		fixedTerm := min(4*m2, 2*math.Exp(1/(sigma*sigma)))
		for _, alpha := range []float64{2, 2.5, 4, 7.5, 10} {
			lo, frac := math.Floor(alpha), alpha-math.Floor(alpha)
			choose2 := (1-frac)*lo*(lo-1)/2 + frac*(lo+1)*lo/2
			for _, c := range []struct {
				sampling Sampling
				want     float64
			}{
				{Poisson, alpha * m2 / 2},
				{Fixed, choose2 * fixedTerm / (alpha - 1)},
			} {
				got := rdpOf(t, Mechanism{Sigma: sigma, SampleRate: q, Sampling: c.sampling}, alpha) / (q * q)
				if math.Abs(got-c.want) > 1e-3*c.want {
					t.Errorf("%v sigma %v order %v: RDP/q² = %v, want %v", c.sampling, sigma, alpha, got, c.want)
				}
			}
		}
	}
}

// q = 1 is the Gaussian mechanism, RDP α/(2σ²); q = 0 releases nothing.
func TestFullAndEmptyBatches(t *testing.T) {
	for _, s := range []Sampling{Poisson, Fixed} {
		for _, alpha := range []float64{1.5, 2, 10.7, 64} {
			sigma := 1.7
			if got, want := rdpOf(t, Mechanism{Sigma: sigma, SampleRate: 1, Sampling: s}, alpha), alpha/(2*sigma*sigma); got != want {
				t.Errorf("%v q = 1, order %v: RDP %v, want %v", s, alpha, got, want)
			}
			if got := rdpOf(t, Mechanism{Sigma: 1.7, SampleRate: 0, Sampling: s}, alpha); got != 0 {
				t.Errorf("%v q = 0, order %v: RDP %v, want 0", s, alpha, got)
			}
		}
	}
}

// The Fixed bound is never below the Poisson RDP at the same q, σ, α.
// At integer α, A_Poisson = E[(1 + q(L-1))^α] = Σ_j C(α,j) q^j M(j) with
// M(j) = E[(L-1)^j] (M(0) = 1, M(1) = 0), and each term of the bound
// dominates: 4√(M(2⌊j/2⌋) M(2⌈j/2⌉)) >= |M(j)| by Cauchy-Schwarz, and
// 2 e^((j-1)ε(j)) = 2 E[L^j] >= E[L^j] + 1 >= E|L-1|^j (E[L^j] >= 1 by
// Jensen); at j = 2, min(4, 2e^c/(e^c-1))·M(2) >= M(2). At fractional α
// the bound interpolates log A linearly between integers, which is above
// the convex log A_Poisson.
func TestFixedBoundsPoisson(t *testing.T) {
	orders := []float64{1.5, 2, 3, 4.5, 8, 16, 33.3, 64, 256, 300}
	for _, q := range []float64{1e-3, 0.01, 0.1, 0.5, 0.9} {
		for _, sigma := range []float64{0.5, 1, 2, 8} {
			fixed, _ := Mechanism{Sigma: sigma, SampleRate: q, Sampling: Fixed}.RDP(orders)
			poisson, _ := Mechanism{Sigma: sigma, SampleRate: q}.RDP(orders)
			for i, a := range orders {
				if fixed[i] < poisson[i]*(1-1e-12) {
					t.Errorf("q %v sigma %v order %v: fixed %v < poisson %v", q, sigma, a, fixed[i], poisson[i])
				}
			}
		}
	}
}

// The Fixed bound holds for a concrete pair of neighbouring datasets:
// replace one example that contributes +1/2 by one that contributes
// -1/2 (sensitivity 1), all others contributing 0. A batch of a fraction
// q sampled without replacement holds the example with probability q,
// so the outputs are P = (1-q)N(0,σ²) + qN(1/2,σ²) and
// Q = (1-q)N(0,σ²) + qN(-1/2,σ²), whose Rényi divergence
// log ∫ P^α Q^(1-α) / (α-1) we integrate numerically.
func TestFixedBoundsAnInstance(t *testing.T) {
	for _, q := range []float64{0.01, 0.1, 0.5} {
		for _, sigma := range []float64{0.5, 1, 3} {
			for _, alpha := range []float64{1.5, 2, 5, 12.5, 40} {
				shift := 1 / (8 * sigma * sigma)
				f := func(z float64) float64 {
					lp := math.Log1p(-q + q*math.Exp(z/(2*sigma)-shift))
					lq := math.Log1p(-q + q*math.Exp(-z/(2*sigma)-shift))
					return logNormalPDF(z) + alpha*lp + (1-alpha)*lq
				}
				r := alpha / sigma
				instance := trapezoidLog(f, -20-r, 20+r, 0.01) / (alpha - 1)
				bound := rdpOf(t, Mechanism{Sigma: sigma, SampleRate: q, Sampling: Fixed}, alpha)
				if bound < instance*(1-1e-9) {
					t.Errorf("q %v sigma %v order %v: bound %v below an instance's divergence %v", q, sigma, alpha, bound, instance)
				}
			}
		}
	}
}

// RDP grows with q and falls with σ, for both samplings: the subsampled
// mixtures at q are mixtures of those at q' > q with the null, and
// adding noise is post-processing (both by the data-processing
// inequality); the Fixed bound's terms are increasing in q and its
// moments and exponents decreasing in σ, and so is the Gaussian's RDP it
// is capped at.
func TestMonotone(t *testing.T) {
	orders := []float64{1.3, 2, 3.7, 12, 64, 512}
	qs := []float64{1e-4, 1e-3, 0.01, 0.05, 0.2, 0.6, 1}
	sigmas := []float64{0.4, 0.7, 1, 1.3, 2, 5, 20}
	for _, s := range []Sampling{Poisson, Fixed} {
		for i := 1; i < len(qs); i++ {
			lo, _ := Mechanism{Sigma: 1, SampleRate: qs[i-1], Sampling: s}.RDP(orders)
			hi, _ := Mechanism{Sigma: 1, SampleRate: qs[i], Sampling: s}.RDP(orders)
			checkNotAbove(t, lo, hi, orders, "%v: q %v vs %v", s, qs[i-1], qs[i])
		}
		for i := 1; i < len(sigmas); i++ {
			lo, _ := Mechanism{Sigma: sigmas[i], SampleRate: 0.05, Sampling: s}.RDP(orders)
			hi, _ := Mechanism{Sigma: sigmas[i-1], SampleRate: 0.05, Sampling: s}.RDP(orders)
			checkNotAbove(t, lo, hi, orders, "%v: sigma %v vs %v", s, sigmas[i], sigmas[i-1])
		}
	}
}

// checkNotAbove checks lo[i] <= hi[i] up to rounding.
func checkNotAbove(t *testing.T, lo, hi, orders []float64, format string, args ...any) {
	t.Helper()
	for i := range lo {
		if lo[i] > hi[i]*(1+1e-12)+1e-300 {
			t.Errorf(format+": order %v: %v > %v", append(args, orders[i], lo[i], hi[i])...)
		}
	}
}

// The central moments by quadrature against their finite-difference
// definition M(n) = Σ_i C(n,i) (-1)^(n-i) e^(i(i-1)/(2σ²)) summed
// exactly, in 1024-bit arithmetic, which no cancellation can defeat here
// (at σ = 30, n = 64 the terms are 10^75 times the sum).
func TestCentralMomentsExact(t *testing.T) {
	for _, sigma := range []float64{0.5, 1, 3, 10, 30} {
		for _, n := range []int{2, 4, 10, 32, 64} {
			got, want := logCentralMoment(sigma, n), logCentralMomentExact(sigma, n)
			if d := math.Abs(got - want); d > 1e-13*max(1, math.Abs(want)) {
				t.Errorf("sigma %v n %d: log M = %.17g, exact %.17g", sigma, n, got, want)
			}
		}
	}
	if got, want := logCentralMoment(1.3, 2), math.Log(math.Expm1(1/(1.3*1.3))); math.Abs(got-want) > 1e-15 {
		t.Errorf("log M(2) = %.17g, want log(e^(1/σ²) - 1) = %.17g", got, want)
	}
}

const exactPrec = 1024

// logCentralMomentExact is log M(n) by the finite-difference sum in
// exactPrec-bit floating point.
func logCentralMomentExact(sigma float64, n int) float64 {
	s := new(big.Float).SetPrec(exactPrec).SetFloat64(sigma)
	c := new(big.Float).SetPrec(exactPrec).Quo(big.NewFloat(1).SetPrec(exactPrec), new(big.Float).Mul(s, s))
	sum := new(big.Float).SetPrec(exactPrec)
	for i := 0; i <= n; i++ {
		x := new(big.Float).SetPrec(exactPrec).Mul(c, big.NewFloat(float64(i*(i-1))/2))
		term := bigExp(x)
		term.Mul(term, new(big.Float).SetInt(new(big.Int).Binomial(int64(n), int64(i))))
		if (n-i)%2 == 1 {
			term.Neg(term)
		}
		sum.Add(sum, term)
	}
	mant := new(big.Float)
	exp := sum.MantExp(mant)
	m, _ := mant.Float64()
	return math.Log(m) + float64(exp)*math.Ln2
}

// bigExp returns e^x for x >= 0: the Taylor series at x/2^k < 1/2, then
// k squarings.
func bigExp(x *big.Float) *big.Float {
	k := 0
	y := new(big.Float).SetPrec(exactPrec).Set(x)
	for y.Cmp(big.NewFloat(0.5)) > 0 {
		y.Quo(y, big.NewFloat(2))
		k++
	}
	sum := new(big.Float).SetPrec(exactPrec).SetInt64(1)
	term := new(big.Float).SetPrec(exactPrec).SetInt64(1)
	for i := 1; term.Sign() != 0 && term.MantExp(nil) > -exactPrec-8; i++ {
		term.Mul(term, y)
		term.Quo(term, big.NewFloat(float64(i)))
		sum.Add(sum, term)
	}
	for range k {
		sum.Mul(sum, sum)
	}
	return sum
}

// Euler's transformation on series with known sums whose terms are
// Hausdorff moment sequences: Σ (-1)^k/(k+1) = log 2 (moments of dt) and
// Σ (-1)^k/(2k+1) = π/4 (moments of dt/(2√t)); 60 terms leave an error
// below 2^-59.
func TestAlternatingTail(t *testing.T) {
	for _, c := range []struct {
		term func(k float64) float64
		want float64
	}{
		{func(k float64) float64 { return 1 / (k + 1) }, math.Ln2},
		{func(k float64) float64 { return 1 / (2*k + 1) }, math.Pi / 4},
	} {
		logs := make([]float64, tailTerms)
		for k := range logs {
			logs[k] = math.Log(c.term(float64(k)))
		}
		if got := math.Exp(alternatingTail(logs)); math.Abs(got-c.want) > 4e-16 {
			t.Errorf("sum %.17g, want %.17g", got, c.want)
		}
	}
}

// logErfc's asymptotic branch (x >= 25) against math.Erfc where both
// apply (erfc is still a normal float64 up to x ≈ 26.5).
func TestLogErfc(t *testing.T) {
	for _, x := range []float64{-3, 0, 0.5, 5, 24.9, 25, 25.5, 26, 26.4} {
		want := math.Log(math.Erfc(x))
		if got := logErfc(x); math.Abs(got-want) > 1e-15*math.Abs(want)+1e-16 {
			t.Errorf("logErfc(%v) = %.17g, want %.17g", x, got, want)
		}
	}
	if got := logErfc(1e3); math.IsInf(got, 0) || got > -1e6 {
		t.Errorf("logErfc(1000) = %v, want about -1e6", got)
	}
}

// The log-space helpers against direct arithmetic where that is exact
// enough.
func TestLogHelpers(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"logAdd", logAdd(math.Log(3), math.Log(5)), math.Log(8)},
		{"logAdd -Inf", logAdd(math.Inf(-1), 2), 2},
		{"logSub", logSub(math.Log(8), math.Log(3)), math.Log(5)},
		{"logSub near", logSub(1e-10, 0), math.Log(math.Expm1(1e-10))},
		{"logSub equal", logSub(2, 2), math.Inf(-1)},
		{"logSumExp", logSumExp([]float64{math.Log(1), math.Log(2), math.Log(3)}), math.Log(6)},
		{"logSumExp huge", logSumExp([]float64{1000, 1000}), 1000 + math.Ln2},
		{"log1pExp", log1pExp(-50), math.Exp(-50)},
		{"log1pExp huge", log1pExp(800), 800},
		{"logAbsExpm1 small", logAbsExpm1(1e-20), math.Log(1e-20)},
		{"logAbsExpm1 neg", logAbsExpm1(-1), math.Log(1 - math.Exp(-1))},
		{"logAbsExpm1 huge", logAbsExpm1(1000), 1000},
		{"logBinom", logBinom(10, 3), math.Log(120)},
	} {
		if !(math.Abs(c.got-c.want) <= 1e-15*math.Abs(c.want)) && c.got != c.want {
			t.Errorf("%s = %.17g, want %.17g", c.name, c.got, c.want)
		}
	}
}
