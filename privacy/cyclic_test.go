package privacy

import (
	"math"
	"strings"
	"testing"
)

// GaussianDelta against the test's own transcription of Balle and Wang's
// Theorem 8 (gaussianDelta, one composition), where that is accurate.
func TestGaussianDeltaMatchesTheorem(t *testing.T) {
	for _, sigma := range []float64{0.3, 0.8, 1, 2.5, 10} {
		for _, eps := range []float64{0, 0.1, 1, 4, 9} {
			want := gaussianDelta(sigma, 1, eps)
			if got := GaussianDelta(1/sigma, eps); math.Abs(got-want) > 1e-12*want+1e-300 && math.Abs(got-want) > 1e-15 {
				t.Errorf("σ %v ε %v: GaussianDelta %v, theorem %v", sigma, eps, got, want)
			}
		}
	}
}

// GaussianEpsilon inverts GaussianDelta from above, and a δ in the far
// tail (where the theorem's direct form cancels) is still finite.
func TestGaussianEpsilonInverts(t *testing.T) {
	for _, mu := range []float64{0.01, 0.5, 1, 3, 20} {
		for _, delta := range []float64{1e-3, 1e-5, 1e-10, 1e-30} {
			eps := GaussianEpsilon(mu, delta)
			if d := GaussianDelta(mu, eps); d > delta {
				t.Errorf("μ %v: δ(ε = %v) = %v above %v", mu, eps, d, delta)
			}
			if d := GaussianDelta(mu, eps*(1-1e-9)); eps > 0 && !(d > delta) {
				t.Errorf("μ %v δ %v: ε = %v is not the smallest: δ just below is %v", mu, delta, eps, d)
			}
		}
	}
}

// cyclicPlan is a Cyclic run of 1000 steps of 100 batches.
func cyclicPlan(strategy []float64) Plan {
	return Plan{Sampling: Cyclic, SampleRate: 0.01, Steps: 1000, MinSep: 100, Delta: 1e-5, Strategy: strategy}
}

// Independent noise under fixed batches is the Gaussian mechanism composed
// once per epoch: k = 10 participations, μ = √k/σ, the test's own exact
// composition (gaussianEpsilon), under PLD; RDP's conversion is above it.
func TestCyclicIndependentNoise(t *testing.T) {
	for _, sigma := range []float64{1, 3, 8} {
		g, err := cyclicPlan(nil).Epsilon(sigma)
		if err != nil {
			t.Fatal(err)
		}
		if want := gaussianEpsilon(sigma, 10, 1e-5); math.Abs(g.Epsilon-want) > 1e-9*want {
			t.Errorf("σ %v: ε %v, exact composition %v", sigma, g.Epsilon, want)
		}
		r := cyclicPlan(nil)
		r.Accounting = RDP
		if gr, err := r.Epsilon(sigma); err != nil || !(gr.Epsilon > g.Epsilon) || gr.Order == 0 {
			t.Errorf("σ %v: RDP gives %+v, %v; want above PLD's %v", sigma, gr, err, g.Epsilon)
		}
	}
}

// bltStrategy is a BLT strategy: 1 + Σ ω x/(1 − θ x), non-negative and
// non-increasing, so its sensitivity is exact.
func bltStrategy(n int) []float64 {
	c := make([]float64, n)
	c[0] = 1
	for k := 1; k < n; k++ {
		c[k] = 0.23*math.Pow(0.986, float64(k-1)) + 0.27*math.Pow(0.62, float64(k-1))
	}
	return c
}

// A strategy's run is the Gaussian mechanism at its sensitivity; σ from
// Sigma meets the target and σ a tolerance below does not; DeltaAt
// inverts Epsilon; the report before the horizon bounds the exact ε from
// above and grows with the steps.
func TestCyclicStrategy(t *testing.T) {
	p := cyclicPlan(bltStrategy(1000))
	s, exact, err := p.Sensitivity()
	if err != nil || !exact || !(s > math.Sqrt(10)) {
		t.Fatalf("sensitivity %v (exact %v), %v: want above independent noise's √10", s, exact, err)
	}
	sigma, g, err := p.Sigma(2)
	if err != nil || g.Epsilon > 2 || math.Abs(g.Epsilon-GaussianEpsilon(s/sigma, 1e-5)) > 1e-12 {
		t.Fatalf("Sigma(2) = %v, %+v, %v", sigma, g, err)
	}
	if below, _ := p.Epsilon(sigma / (1 + 2*SigmaTolerance)); !(below.Epsilon > 2) {
		t.Errorf("σ %v is not the smallest: σ below spends %v", sigma, below.Epsilon)
	}
	if d, err := p.DeltaAt(sigma, g.Epsilon); err != nil || math.Abs(d-1e-5) > 1e-9 {
		t.Errorf("DeltaAt(σ, ε) = %v, %v; want 1e-5", d, err)
	}
	a, _ := p.Accountant(sigma)
	prev := 0.0
	for _, steps := range []int{1, 150, 499, 500, 999, 1000} {
		after := a.EpsilonAfter(steps).Epsilon
		exactNow, _ := a.(*CyclicAccountant).Epsilon(steps)
		if after < exactNow.Epsilon || after < prev {
			t.Errorf("after %d steps: report %v, exact %v, previous %v", steps, after, exactNow.Epsilon, prev)
		}
		prev = after
	}
}

// The refusals: a strategy under sampling that would claim amplification,
// a strategy shorter than the run, a separation below one step.
func TestCyclicRefusals(t *testing.T) {
	poisson := cyclicPlan(bltStrategy(1000))
	poisson.Sampling = Poisson
	short := cyclicPlan(bltStrategy(999))
	noSep := cyclicPlan(nil)
	noSep.MinSep = 0
	huge := make([]float64, 1000)
	for i := range huge {
		huge[i] = 1e200 * float64(1-2*(i%2)) // the sensitivity's sums overflow: an error, never ε = 0
	}
	for _, c := range []struct {
		p    Plan
		want string
	}{
		{poisson, "no amplification by sampling is claimed for correlated noise"},
		{short, "the strategy has 999 coefficients: want one for each of the 1000 steps"},
		{noSep, "minimum separation 0"},
		{cyclicPlan(huge), "overflow float64"},
	} {
		if _, err := c.p.Epsilon(1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.p.Sampling, err, c.want)
		}
		if _, _, err := c.p.Sigma(1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Sigma: %v, want %q", err, c.want)
		}
	}
}

// A report past the strategy the accountant was told is an error, not a
// strategy padded with zeros; NaN is no guarantee.
func TestCyclicPastTheStrategy(t *testing.T) {
	a, err := cyclicPlan(bltStrategy(1000)).Accountant(5)
	if err != nil {
		t.Fatal(err)
	}
	if g := a.EpsilonAfter(1001); !math.IsInf(g.Epsilon, 1) {
		t.Errorf("1001 steps of a 1000-step strategy: ε %v, want +Inf", g.Epsilon)
	}
	if d := GaussianDelta(math.NaN(), 1); d != 1 {
		t.Errorf("GaussianDelta(NaN, 1) = %v, want 1", d)
	}
}

// A Schedule of fixed batches separates an example's batches by ⌈N/B⌉.
func TestCyclicSchedule(t *testing.T) {
	p, err := Schedule{DatasetSize: 1001, BatchSize: 10, Epochs: 3, Sampling: Cyclic}.Plan()
	if err != nil || p.MinSep != 101 || p.Steps != 303 {
		t.Fatalf("plan %+v, %v: want 101 steps apart, 303 steps", p, err)
	}
	if s, _, _ := p.Sensitivity(); math.Abs(s-math.Sqrt(3)) > 1e-15 {
		t.Errorf("sensitivity %v, want √3", s)
	}
}
