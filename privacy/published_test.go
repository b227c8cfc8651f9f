package privacy

import (
	"math"
	"testing"
)

// Tests against published values: each names its source, and every
// number in them is the source's own.

// opacusOrders are Opacus' RDPAccountant.DEFAULT_ALPHAS:
// [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64)).
func opacusOrders() []float64 {
	var orders []float64
	for x := 1; x < 100; x++ {
		orders = append(orders, 1+float64(x)/10)
	}
	for a := 12; a < 64; a++ {
		orders = append(orders, float64(a))
	}
	return orders
}

// composed returns the RDP of steps steps of m at the orders.
func composed(t *testing.T, m Mechanism, steps int, orders []float64) []float64 {
	t.Helper()
	rdp, err := m.RDP(orders)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rdp {
		rdp[i] *= float64(steps)
	}
	return rdp
}

// opacusEpsilon is the ε of Opacus' test_rdp_accountant run under the
// given series and conversion.
func opacusEpsilon(t *testing.T, series Series, convert func(orders, rdp []float64, delta float64) Guarantee) Guarantee {
	orders := opacusOrders()
	m := Mechanism{Sigma: 1.5, SampleRate: 0.04, Series: series}
	return convert(orders, composed(t, m, int(90/0.04), orders), 1e-5)
}

func improved(orders, rdp []float64, delta float64) Guarantee {
	g, _ := EpsilonFromRDP(orders, rdp, delta)
	return g
}

// Opacus, tests/accountants_test.py, test_rdp_accountant: σ = 1.5,
// q = 0.04, int(90 / 0.04) = 2250 steps, δ = 1e-5 give ε = 7.32911117143
// (assertAlmostEqual, 7 places). We hold it to 1e-10: Opacus stops its
// fractional-order series once both terms are below e^-30 ≈ 1e-13, which
// over 2250 steps at the optimal order 3.9 moves ε by up to ~1e-10.
func TestOpacusRDPAccountant(t *testing.T) {
	g := opacusEpsilon(t, ExactSeries, improved)
	if d := g.Epsilon - 7.32911117143; math.Abs(d) > 1e-10 {
		t.Errorf("epsilon %.13g, want 7.32911117143 (off by %.3g)", g.Epsilon, d)
	}
	t.Logf("epsilon %.13g at order %v", g.Epsilon, g.Order)
}

// The value above is the exact series with the improved conversion:
// Mironov's classic conversion (ε = rdp - log δ/(α-1), which older Opacus
// releases used; 8.0738) and the magnitude series of current
// dp_accounting (7.32933) both miss it by far more than its digits.
func TestOpacusValueConventions(t *testing.T) {
	for _, c := range []struct {
		name string
		g    Guarantee
	}{
		{"classic conversion", opacusEpsilon(t, ExactSeries, classicEpsilonFromRDP)},
		{"magnitude series", opacusEpsilon(t, MagnitudeSeries, improved)},
	} {
		if d := math.Abs(c.g.Epsilon - 7.32911117143); d < 1e-6 {
			t.Errorf("%s: epsilon %.13g also matches", c.name, c.g.Epsilon)
		}
	}
}

// Opacus, tests/accountants_test.py, test_get_noise_multiplier_rdp_epochs:
// ε = 8, δ = 1e-5, q = 0.04, 90 epochs (int(90/0.04) steps) give σ = 1.416
// to 4 places. Opacus bisects until its σ has 7.99 <= ε(σ) < 8, so that
// σ lies in [1.41595, 1.41605]: ε must be >= 7.99 at the lower end and
// below 8 at the upper, and the smallest σ meeting 8 at most the upper.
func TestOpacusNoiseMultiplier(t *testing.T) {
	p := Plan{SampleRate: 0.04, Steps: int(90 / 0.04), Delta: 1e-5, Orders: opacusOrders(), Accounting: RDP}
	lo, hi := 1.416-5e-5, 1.416+5e-5
	if g, _ := p.Epsilon(lo); g.Epsilon < 7.99 {
		t.Errorf("epsilon(%v) = %v, want >= 7.99", lo, g.Epsilon)
	}
	if g, _ := p.Epsilon(hi); g.Epsilon >= 8 {
		t.Errorf("epsilon(%v) = %v, want < 8", hi, g.Epsilon)
	}
	sigma, _, err := p.Sigma(8)
	if err != nil || sigma > hi {
		t.Errorf("Sigma(8) = %v, %v; want at most %v", sigma, err, hi)
	}
}

// dp_accounting, rdp_privacy_accountant_test.py,
// test_compute_rdp_poisson_sampled_gaussian: 50 steps of σ = 2.5,
// q = 0.01 at orders 1.5, 2.5, 5, 50, 100, compared with np.allclose at
// rtol 1e-4 (and its default atol 1e-8). Current dp_accounting (commit
// d986e7ff) sums the magnitudes of the fractional series; its versions
// up to commit 91b4eceb, and TF Privacy's rdp_accountant_test.py, summed
// the signed series and published the second row.
func TestDPAccountingPoissonRDP(t *testing.T) {
	orders := []float64{1.5, 2.5, 5, 50, 100}
	for _, c := range []struct {
		series Series
		want   []float64
	}{
		{MagnitudeSeries, []float64{6.70579741e-04, 1.08548710e-03, 2.18075656e-03, 2.38460375e-02, 1.67416308e02}},
		{ExactSeries, []float64{6.5007e-04, 1.0854e-03, 2.1808e-03, 2.3846e-02, 1.6742e+02}},
	} {
		got := composed(t, Mechanism{Sigma: 2.5, SampleRate: 0.01, Series: c.series}, 50, orders)
		for i, w := range c.want {
			if math.Abs(got[i]-w) > 1e-8+1e-4*math.Abs(w) {
				t.Errorf("%v series, order %v: RDP %.9g, want %.9g", c.series, orders[i], got[i], w)
			}
		}
	}
}

// TF Privacy, rdp_accountant_test.py, test_compute_rdp_scalar: 10 steps
// of σ = 2, q = 0.1 at order 5 have RDP 0.07737 (5 places); and
// test_compute_rdp_no_sampling: q = 1, σ = 10, order 20 give 0.1.
func TestTFPrivacyRDP(t *testing.T) {
	if got := composed(t, Mechanism{Sigma: 2, SampleRate: 0.1}, 10, []float64{5})[0]; math.Abs(got-0.07737) > 5e-6 {
		t.Errorf("RDP %v, want 0.07737", got)
	}
	if got := composed(t, Mechanism{Sigma: 10, SampleRate: 1}, 1, []float64{20})[0]; got != 0.1 {
		t.Errorf("RDP %v, want 0.1", got)
	}
}

// dp_accounting, test_compute_epsilon_delta_gaussian: σ = 4.530877117
// is chosen to give exactly (1, 1e-6)-DP for one full Gaussian step, with
// the orders 0.001·i, i in [1000, 100000) (assertAlmostEqual, 7 places).
// Order 1 itself is left out: the conversion never uses it.
func TestDPAccountingGaussianEpsilon(t *testing.T) {
	var orders []float64
	for i := 1001; i < 100000; i++ {
		orders = append(orders, 0.001*float64(i))
	}
	rdp := composed(t, Mechanism{Sigma: 4.530877117, SampleRate: 1}, 1, orders)
	g, err := EpsilonFromRDP(orders, rdp, 1e-6)
	if err != nil || math.Abs(g.Epsilon-1) > 5e-8 {
		t.Errorf("epsilon %.12g (%v), want 1", g.Epsilon, err)
	}
}

// dp_accounting, test_compute_epsilon_delta_pure_dp: RDP 1.1 at orders
// 2 … 32 (pure 1.1-DP) gives ε = 1.32783806176 at order 32 for δ = 1e-5
// (assertAlmostEqual, 7 places).
func TestDPAccountingPureDPEpsilon(t *testing.T) {
	var orders, rdp []float64
	for a := 2; a <= 32; a++ {
		orders, rdp = append(orders, float64(a)), append(rdp, 1.1)
	}
	g, err := EpsilonFromRDP(orders, rdp, 1e-5)
	if err != nil || math.Abs(g.Epsilon-1.32783806176) > 5e-8 || g.Order != 32 {
		t.Errorf("epsilon %.12g at order %v (%v), want 1.32783806176 at 32", g.Epsilon, g.Order, err)
	}
}
