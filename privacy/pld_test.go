package privacy

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// pldEpsilon is the ε of steps steps of m at delta by a PLD accountant
// planned for exactly that run.
func pldEpsilon(t *testing.T, m Mechanism, steps int, delta float64) float64 {
	t.Helper()
	a, err := NewPLDAccountant(m, delta, 0, steps)
	if err != nil {
		t.Fatal(err)
	}
	return a.EpsilonAfter(steps).Epsilon
}

// gaussianDelta is the exact δ(ε) of T compositions of the Gaussian
// mechanism with sensitivity 1 and noise σ, Balle and Wang 2018
// ("Improving the Gaussian Mechanism for Differential Privacy", ICML),
// Theorem 8 with μ = √T/σ: Φ(μ/2 - ε/μ) - e^ε·Φ(-μ/2 - ε/μ).
func gaussianDelta(sigma float64, steps int, eps float64) float64 {
	mu := math.Sqrt(float64(steps)) / sigma
	phi := func(x float64) float64 { return math.Erfc(-x/math.Sqrt2) / 2 }
	if math.IsInf(math.Exp(eps), 1) {
		return 0
	}
	return phi(mu/2-eps/mu) - math.Exp(eps)*phi(-mu/2-eps/mu)
}

// gaussianEpsilon inverts gaussianDelta by bisection.
func gaussianEpsilon(sigma float64, steps int, delta float64) float64 {
	lo, hi := 0.0, 2000.0
	for range 200 {
		if mid := (lo + hi) / 2; gaussianDelta(sigma, steps, mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// With q = 1 the exact ε is known: the PLD accountant is never below it
// and within its Slack of ε at 0.998·δ; measured, it is within 2e-5 of
// it relatively (plus 1e-4), far inside the slack, and within 1e-4 at
// δ = 1e-8, where the cuts' rounding floor adds a few percent to δ.
func TestPLDAnalyticGaussian(t *testing.T) {
	for _, c := range []struct {
		sigma float64
		steps int
	}{{0.5, 1}, {1, 1}, {1, 10}, {2, 100}, {2, 1000}, {5, 1000}, {5, 10000}, {10, 100000}} {
		for _, delta := range []float64{1e-3, 1e-5, 1e-8} {
			m := Mechanism{Sigma: c.sigma, SampleRate: 1}
			a, err := NewPLDAccountant(m, delta, 0, c.steps)
			if err != nil {
				t.Fatal(err)
			}
			got := a.EpsilonAfter(c.steps).Epsilon
			exact := gaussianEpsilon(c.sigma, c.steps, delta)
			bound := gaussianEpsilon(c.sigma, c.steps, 0.998*delta) + a.Slack(c.steps)
			measured := map[bool]float64{true: 2e-5, false: 1e-4}[delta >= 1e-5]
			if got < exact || got > bound || got-exact > measured*exact+1e-4 {
				t.Errorf("σ %v, %d steps, δ %g: PLD ε %.9g, exact %.9g, bound %.9g", c.sigma, c.steps, delta, got, exact, bound)
			}
		}
	}
}

// One step's hockey-stick curves of the two pairs against dp_accounting's
// exact values: google/differential-privacy,
// python/dp_accounting/dp_accounting/pld/privacy_loss_mechanism_test.py,
// test_gaussian_get_delta_for_epsilon (standard deviation, sensitivity,
// sampling probability, adjacency, ε → δ); σ here is the standard
// deviation over the sensitivity.
func TestPLDOneStepCurves(t *testing.T) {
	for _, c := range []struct {
		sigma, q  float64
		remove    bool
		eps, want float64
	}{
		{1, 0.8, false, 1, 0.0231362104090899},
		{1, 0.8, true, 1, 0.0816951786585355},
		{1.0 / 3, 0.7, false, 1, 0.1195051215523554},
		{1.0 / 3, 0.7, true, 1, 0.5356298793262404},
		{1, 0.3, true, 2, 0.0003341102928869332},
	} {
		sP, _, sQ, _ := gaussianPair{c.q, c.sigma, c.remove}.lossTails(c.eps)
		if got := sP - math.Exp(c.eps)*sQ; math.Abs(got-c.want) > 1e-13*c.want {
			t.Errorf("σ %v q %v remove %v ε %v: δ %.16g, want %.16g", c.sigma, c.q, c.remove, c.eps, got, c.want)
		}
	}
}

// Published PLD and PRV values; each names its source.
func TestPLDPublished(t *testing.T) {
	for _, c := range []struct {
		src         string
		sigma, q    float64
		steps       int
		delta, want float64
		below, tol  float64 // want - below <= got <= want + tol
	}{
		// pytorch/opacus, opacus/tests/prv_accountant.py, msr_values
		// (computed with microsoft/prv_accountant), δ = 1e-6: Opacus'
		// get_epsilon returns eps_upper with eps_error 0.01, for the remove
		// direction, so the exact ε is at most want and at least want - 0.02.
		{"opacus prv", 0.8, 0.001, 100, 1e-6, 0.270403364058018680360362395731, 0.02, 0},
		{"opacus prv", 1.5, 0.001, 1000, 1e-6, 0.0998206602308474855167474970585, 0.02, 0},
		{"opacus prv", 2.0, 0.05, 100, 1e-6, 1.28363737962406521120328761754, 0.02, 0},
		{"opacus prv", 1.5, 0.05, 1000, 1e-6, 6.20996924657726712126759593957, 0.02, 0},
		{"opacus prv", 3.0, 0.05, 1000, 1e-6, 2.52757432605973830774814814504, 0.02, 0},
		{"opacus prv", 0.8, 0.001, 20000, 1e-6, 1.29600925757016161021795142005, 0.02, 0},
		{"opacus prv", 0.8, 0.2, 100, 1e-6, 24.3336641779225644199868838768, 0.02, 0},
		// opacus/tests/accountants_test.py, test_prv_accountant: int(90 // 0.04) = 2249 steps.
		{"opacus test_prv_accountant", 1.5, 0.04, 2249, 1e-5, 6.777395712150674, 0.02, 0},
		// tensorflow/privacy, compute_dp_sgd_privacy_test.py (dp_accounting's
		// pessimistic PLD, interval 1e-4, add/remove), 120 steps.
		{"tf privacy, no microbatching", 0.7, 0.01, 120, 1e-5, 2.4612381, 1e-4, 1e-4},
		{"tf privacy, microbatching", 0.35, 0.01, 120, 1e-5, 18.6977407, 1e-4, 1e-4},
		{"tf privacy statement (%.3f)", 1.0, 0.0064, 782, 1e-6, 1.199, 5e-4, 5e-4},
		// google-deepmind/jax_privacy, jax_privacy/accounting.py doctest:
		// round(ε, 2) = 3.77.
		{"jax_privacy", 3, 0.1, 512, 1e-6, 3.77, 0.005, 0.005},
		// DPBayes/PLD-Accountant (Koskela, Jälkö and Honkela 2020),
		// tests/test_compute_epsilon.py, get_epsilon_R (remove, grid 4e-5,
		// not pessimistic): within 2e-4 relatively.
		{"koskela", 2, 0.01, 10000, 1e-6, 2.446734047007243, 5e-4, 5e-4},
		{"koskela", 2, 0.01, 10000, 1e-5, 2.162704603256141, 5e-4, 5e-4},
		{"koskela", 1, 0.01, 10000, 1e-6, 6.907422808389587, 1.4e-3, 1.4e-3},
		{"koskela", 1, 0.02, 10000, 1e-6, 15.64135722007042, 3e-3, 3e-3},
		{"koskela", 2, 0.01, 100000, 1e-6, 8.984848512304165, 1.8e-3, 1.8e-3},
	} {
		got := pldEpsilon(t, Mechanism{Sigma: c.sigma, SampleRate: c.q}, c.steps, c.delta)
		if got < c.want-c.below || got > c.want+c.tol {
			t.Errorf("%s: σ %v q %v %d steps δ %g: ε %.7f, want %.7f (-%g, +%g)", c.src, c.sigma, c.q, c.steps, c.delta, got, c.want, c.below, c.tol)
		}
	}
}

// δ for an ε, against published values: dp_accounting,
// pld_privacy_accountant_test.py, test_poisson_subsampled_gaussian (to
// 1e-3, its tolerance); Koskela et al.'s tests/test_compute_delta.py,
// get_delta_R (remove direction, grid 4e-5: within 1e-3 relatively).
func TestPLDDeltaPublished(t *testing.T) {
	for _, c := range []struct {
		sigma, q, eps float64
		steps         int
		interval      float64
		want, tol     float64
	}{
		{0.5, 0.2, 1, 3, 1e-4, 0.15594, 1e-3},
		{2, 0.01, 1, 10000, 0, 0.010224911209191894, 1e-5},
		{1, 0.01, 1, 10000, 0, 0.2391763947364977, 2.4e-4},
	} {
		p := Plan{SampleRate: c.q, Steps: c.steps, Interval: c.interval}
		if got, err := p.DeltaAt(c.sigma, c.eps); err != nil || math.Abs(got-c.want) > c.tol {
			t.Errorf("σ %v q %v %d steps: δ(%v) = %v (%v), want %v", c.sigma, c.q, c.steps, c.eps, got, err, c.want)
		}
	}
}

// δ for an ε against the exact Gaussian (never below, within 1e-3
// relatively; measured, up to 3e-4), and both ways round: δ at the ε that a δ gives is that δ
// (PLD to 1e-3 relatively, RDP exactly), RDP's δ above PLD's.
func TestDeltaAt(t *testing.T) {
	for _, c := range []struct {
		sigma float64
		steps int
		eps   float64
	}{{1, 1, 2}, {2, 100, 25}, {5, 1000, 45}, {5, 10000, 300}} {
		got, err := Plan{SampleRate: 1, Steps: c.steps}.DeltaAt(c.sigma, c.eps)
		exact := gaussianDelta(c.sigma, c.steps, c.eps)
		if err != nil || got < exact || got > exact*(1+1e-3) {
			t.Errorf("σ %v, %d steps: δ(%v) = %v (%v), exact %v", c.sigma, c.steps, c.eps, got, err, exact)
		}
	}
	for _, s := range []Sampling{Poisson, Fixed} {
		for _, a := range []Accounting{PLD, RDP} {
			p := Plan{Sampling: s, Accounting: a, SampleRate: 0.01, Steps: 3000, Delta: 1e-6}
			g, err := p.Epsilon(1)
			if err != nil {
				t.Fatal(err)
			}
			d, err := p.DeltaAt(1, g.Epsilon)
			if tol := map[Accounting]float64{PLD: 1e-3, RDP: 1e-9}[a]; err != nil || math.Abs(d/1e-6-1) > tol {
				t.Errorf("%v %v: δ(ε(1e-6) = %v) = %v (%v)", s, a, g.Epsilon, d, err)
			}
		}
		pld, _ := Plan{Sampling: s, SampleRate: 0.01, Steps: 3000}.DeltaAt(1, 2)
		rdp, _ := Plan{Sampling: s, Accounting: RDP, SampleRate: 0.01, Steps: 3000}.DeltaAt(1, 2)
		if !(pld < rdp) {
			t.Errorf("%v: δ(2) by PLD %v, by RDP %v", s, pld, rdp)
		}
	}
	if _, err := (Plan{SampleRate: 0.01, Steps: 10}).DeltaAt(1, -1); err == nil {
		t.Error("ε = -1 accepted")
	}
}

// PLD is never above RDP, for either sampling, and fixed-size sampling
// under replace-one is never below Poisson at the same σ.
func TestPLDBelowRDP(t *testing.T) {
	for _, sigma := range []float64{0.6, 1, 2} {
		for _, q := range []float64{0.001, 0.01, 0.1} {
			for _, steps := range []int{10, 1000, 10000} {
				var pld [2]float64
				for _, s := range []Sampling{Poisson, Fixed} {
					p := Plan{Sampling: s, Accounting: RDP, SampleRate: q, Steps: steps, Delta: 1e-5}
					rdp, err := p.Epsilon(sigma)
					if err != nil {
						t.Fatal(err)
					}
					pld[s] = pldEpsilon(t, Mechanism{Sigma: sigma, SampleRate: q, Sampling: s}, steps, 1e-5)
					if pld[s] > rdp.Epsilon {
						t.Errorf("%v σ %v q %v %d steps: PLD ε %v > RDP ε %v", s, sigma, q, steps, pld[s], rdp.Epsilon)
					}
				}
				if pld[Fixed] < pld[Poisson] {
					t.Errorf("σ %v q %v %d steps: fixed ε %v < poisson ε %v", sigma, q, steps, pld[Fixed], pld[Poisson])
				}
			}
		}
	}
}

// ε grows with the steps and the sample rate and falls with σ.
func TestPLDMonotone(t *testing.T) {
	for _, s := range []Sampling{Poisson, Fixed} {
		prev := 0.0
		for _, steps := range []int{1, 3, 10, 30, 100, 300, 1000} {
			eps := pldEpsilon(t, Mechanism{Sigma: 1, SampleRate: 0.05, Sampling: s}, steps, 1e-5)
			if eps < prev {
				t.Errorf("%v: ε falls from %v to %v at %d steps", s, prev, eps, steps)
			}
			prev = eps
		}
		prev = 0
		for _, q := range []float64{0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1} {
			eps := pldEpsilon(t, Mechanism{Sigma: 1, SampleRate: q, Sampling: s}, 100, 1e-5)
			if eps < prev {
				t.Errorf("%v: ε falls from %v to %v at q = %v", s, prev, eps, q)
			}
			prev = eps
		}
		prev = math.Inf(1)
		for _, sigma := range []float64{0.5, 0.7, 1, 1.5, 2, 4} {
			eps := pldEpsilon(t, Mechanism{Sigma: sigma, SampleRate: 0.05, Sampling: s}, 100, 1e-5)
			if eps > prev {
				t.Errorf("%v: ε grows from %v to %v at σ = %v", s, prev, eps, sigma)
			}
			prev = eps
		}
	}
}

// Composing one step's PLD with itself T times, one step at a time, is
// the T-step accounting of selfCompose.
func TestPLDSelfCompose(t *testing.T) {
	for _, s := range []Sampling{Poisson, Fixed} {
		m := Mechanism{Sigma: 0.8, SampleRate: 0.02, Sampling: s}
		steps, err := m.plds(Interval(m), 1e-15)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{2, 7, 30} {
			for _, d := range steps {
				seq := d
				for range n - 1 {
					if seq, err = seq.compose(d, 1e-16); err != nil {
						t.Fatal(err)
					}
				}
				all, err := d.selfCompose(n, 1e-14)
				want, got := seq.epsilon(1e-5), all.epsilon(1e-5)
				if err != nil || math.Abs(got-want) > 1e-9*want {
					t.Errorf("%v, %d steps: selfCompose ε %.12g, one by one %.12g", s, n, got, want)
				}
			}
		}
	}
}

// Before its horizon a planned accountant reports ε at the next
// milestone: never below the exact ε, equal to it at the milestones,
// never falling; at the horizon it is the plan's ε.
func TestPLDMilestones(t *testing.T) {
	p := Plan{SampleRate: 0.01, Steps: 1000, Delta: 1e-5}
	acc, err := p.Accountant(1)
	if err != nil {
		t.Fatal(err)
	}
	a := acc.(*PLDAccountant)
	prev := 0.0
	for _, steps := range []int{0, 1, 9, 10, 11, 255, 500, 999, 1000} {
		got, exact := a.EpsilonAfter(steps).Epsilon, 0.0
		if steps > 0 {
			exact, _ = a.exactEpsilon(steps)
		}
		if got < exact || (steps%10 == 0 && got != exact) || got < prev {
			t.Errorf("after %d steps: ε %v, exact %v, before %v", steps, got, exact, prev)
		}
		prev = got
	}
	if want, _ := p.Epsilon(1); a.EpsilonAfter(1000) != want {
		t.Errorf("at the horizon: %+v, plan says %+v", a.EpsilonAfter(1000), want)
	}
}

// Precompute from a resumed step tables only the milestones a run
// resumed there asks for: those at or after its own and the horizon,
// once each, reports computed already included; the reports are the
// ones computed on demand, bit for bit.
func TestPLDPrecomputeFrom(t *testing.T) {
	p := Plan{SampleRate: 0.1, Steps: 101, Delta: 1e-5} // a milestone every 2 steps, and the horizon
	for _, c := range []struct{ from, before, want int }{
		{0, 0, 51}, {1, 0, 51}, {2, 0, 51}, {3, 0, 50}, {100, 0, 2}, {101, 0, 1}, {50, 3, 27},
	} {
		acc, err := p.Accountant(2)
		if err != nil {
			t.Fatal(err)
		}
		a := acc.(*PLDAccountant)
		for m := 1; m <= c.before; m++ { // milestones composed before, the resumed one among them
			a.EpsilonAfter(c.from + 2*(m-1))
		}
		<-a.Precompute(c.from, make(chan struct{}))
		if n := a.Evaluations(); n != c.want {
			t.Errorf("from step %d (%d composed before): %d compositions in all, want %d", c.from, c.before, n, c.want)
		}
		for _, steps := range []int{c.from, (c.from + 101) / 2, 101} {
			if got, want := a.EpsilonAfter(steps), pldAfter(t, p, steps); got != want {
				t.Errorf("from step %d: after %d steps the table says %+v, composed on demand %+v", c.from, steps, got, want)
			}
		}
	}
}

// pldAfter is the report after steps of a fresh accountant of plan p at
// σ = 2, composed on demand.
func pldAfter(t *testing.T, p Plan, steps int) Guarantee {
	t.Helper()
	acc, err := p.Accountant(2)
	if err != nil {
		t.Fatal(err)
	}
	return acc.EpsilonAfter(steps)
}

// Calibration under PLD meets the target, is the smallest σ to the
// tolerance, and reports what Epsilon reports.
func TestPLDSigmaRoundTrip(t *testing.T) {
	for _, c := range []struct {
		s     Sampling
		q     float64
		steps int
		eps   float64
	}{{Poisson, 0.001, 10000, 1}, {Poisson, 0.02, 1000, 3}, {Poisson, 0.2, 10, 0.5}, {Fixed, 0.02, 1000, 0.5}, {Fixed, 0.2, 10, 3}} {
		checkRoundTrip(t, Plan{Sampling: c.s, SampleRate: c.q, Steps: c.steps, Delta: 1e-5}, c.eps)
	}
}

// The FFT convolution agrees with the direct sum.
func TestConvolve(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range [][2]int{{65, 65}, {100, 3000}, {1000, 1000}, {4097, 70}} {
		a, b := make([]float64, n[0]), make([]float64, n[1])
		for i := range a {
			a[i] = r.Float64()
		}
		for i := range b {
			b[i] = r.Float64()
		}
		// The FFT's error is small next to the largest entry (Higham's
		// normwise bound), not next to each.
		want, got := convolveDirect(a, b), convolve(a, b)
		top := 0.0
		for _, v := range want {
			top = max(top, v)
		}
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-13*top {
				t.Fatalf("%v: entry %d: %v, want %v", n, i, got[i], want[i])
			}
		}
	}
}

func TestNormalQuantileAbove(t *testing.T) {
	for _, p := range []float64{0.5, 0.1, 1e-3, 1e-10, 1e-18, 1e-30, 1e-100, 1e-300} {
		z := normalQuantileAbove(p)
		if got := math.Exp(logErfc(z/math.Sqrt2)) / 2; math.Abs(got/p-1) > 1e-12 {
			t.Errorf("P(N > %v) = %v, want %v", z, got, p)
		}
	}
}

// threshold inverts the remove pair's loss, past e^709 too.
func TestThreshold(t *testing.T) {
	for _, g := range []gaussianPair{{0.01, 1, true}, {0.5, 0.03, true}, {1, 2, true}} {
		for _, u := range []float64{-1e-3, 1e-6, 0.5, 1, 1.5, 30, 700, 800, 5000} {
			if u <= math.Log1p(-g.q) {
				continue
			}
			if got := g.loss(g.threshold(u)); math.Abs(got-u) > 1e-9*max(1, u) {
				t.Errorf("%+v: loss(threshold(%v)) = %v", g, u, got)
			}
		}
	}
}

// Interval keeps to [MinInterval, MaxInterval].
func TestInterval(t *testing.T) {
	for _, c := range []struct {
		m    Mechanism
		want float64
	}{
		{Mechanism{Sigma: 1, SampleRate: 1}, MaxInterval},
		{Mechanism{Sigma: 1, SampleRate: 0}, MaxInterval},
		{Mechanism{Sigma: 1, SampleRate: 0.01}, 0.01 * math.Sqrt(math.E-1) / 30},
		{Mechanism{Sigma: 1e4, SampleRate: 1e-5}, MinInterval},
	} {
		if got := Interval(c.m); math.Abs(got-c.want) > 1e-15*c.want {
			t.Errorf("%+v: %v, want %v", c.m, got, c.want)
		}
	}
}

func TestPLDErrors(t *testing.T) {
	m := Mechanism{Sigma: 1, SampleRate: 0.01}
	for _, c := range []struct {
		m               Mechanism
		delta, interval float64
		steps           int
		msg             string
	}{
		{m, 0, 0, 10, "delta 0: want a value in (0, 1)"},
		{m, 1e-5, 2, 10, "PLD interval 2: want a value in [1e-09, 1]"},
		{m, 1e-5, 0, 0, "0 steps: want 1 to 2^53"},
		{Mechanism{Sigma: -1, SampleRate: 0.01}, 1e-5, 0, 10, "sigma -1: want a finite value > 0"},
		{Mechanism{Sigma: 1e-4, SampleRate: 0.01}, 1e-5, 0, 10, "the privacy loss of one step spans"},
		{m, 1e-5, 1e-10, 10, "PLD interval 1e-10: want a value in [1e-09, 1]"},
	} {
		_, err := NewPLDAccountant(c.m, c.delta, c.interval, c.steps)
		if err == nil || len(err.Error()) < len(c.msg) || err.Error()[:len(c.msg)] != c.msg {
			t.Errorf("%+v δ %v h %v T %d: error %v, want %q", c.m, c.delta, c.interval, c.steps, err, c.msg)
		}
	}
}

// Losses past e^709: a small σ spreads one step's loss over hundreds,
// where e^l overflows and the Q-mass underflows; the masses stay finite
// and ε is large and below RDP's (a NaN mass once made it 0).
func TestPLDSmallSigma(t *testing.T) {
	for _, s := range []Sampling{Poisson, Fixed} {
		for _, sigma := range []float64{0.02, 0.03} {
			m := Mechanism{Sigma: sigma, SampleRate: 0.01, Sampling: s}
			pld := pldEpsilon(t, m, 1, 1e-5)
			rdp, err := Plan{Sampling: s, Accounting: RDP, SampleRate: 0.01, Steps: 1, Delta: 1e-5}.Epsilon(sigma)
			if err != nil || !(pld > 100) || pld > rdp.Epsilon {
				t.Errorf("%v σ %v: PLD ε %v, RDP ε %v (%v)", s, sigma, pld, rdp.Epsilon, err)
			}
		}
	}
}

// Small δ over many steps: the compositions' tail cuts stop at the FFT's
// rounding noise instead of letting the grid double every time; ε stays
// below RDP's, and a δ too small to resolve is ErrBeyondPLD.
func TestPLDSmallDelta(t *testing.T) {
	for _, delta := range []float64{1e-8, 1e-9} {
		p := Plan{SampleRate: 0.01, Steps: 100000, Delta: delta}
		pld, err := p.Epsilon(1)
		p.Accounting = RDP
		rdp, _ := p.Epsilon(1)
		if err != nil || pld.Epsilon > rdp.Epsilon {
			t.Errorf("δ %g: PLD ε %v (%v), RDP ε %v", delta, pld.Epsilon, err, rdp.Epsilon)
		}
	}
	// One step's long thin tail (q = 1e-3, σ = 0.5), which the FFT's
	// rounding would drown without convolve's split.
	p := Plan{SampleRate: 0.001, Steps: 100000, Delta: 1e-7}
	pld, err := p.Epsilon(0.5)
	p.Accounting = RDP
	if rdp, _ := p.Epsilon(0.5); err != nil || pld.Epsilon > rdp.Epsilon {
		t.Errorf("q 1e-3, σ 0.5: PLD ε %v (%v), RDP ε %v", pld.Epsilon, err, rdp.Epsilon)
	}
	if _, err := (Plan{SampleRate: 0.01, Steps: 100000, Delta: 1e-13}).Epsilon(1); !errors.Is(err, ErrBeyondPLD) {
		t.Errorf("δ 1e-13: error %v, want ErrBeyondPLD", err)
	}
}

// The remove pair's curve is above the add pair's for ε > 0 and below for
// ε < 0 (they meet at 0), which fixedPLD's construction uses; and its
// discrete curve is their maximum at every grid point.
func TestFixedPLDCurve(t *testing.T) {
	curve := func(g gaussianPair, eps float64) float64 {
		sP, _, sQ, _ := g.lossTails(eps)
		return sP - math.Exp(eps)*sQ
	}
	for _, q := range []float64{0.001, 0.01, 0.1, 0.5, 0.9, 1} {
		for _, sigma := range []float64{0.3, 0.7, 1, 2, 5} {
			rem, add := gaussianPair{q, sigma, true}, gaussianPair{q, sigma, false}
			for eps := -3.0; eps <= 6; eps += 0.25 {
				// 1e-9: S_P - e^ε·S_Q cancels to a few digits where δ is
				// tiny (at q = 1 the two are one curve).
				r, a := curve(rem, eps), curve(add, eps)
				if eps > 0 && a > r*(1+1e-9)+1e-300 || eps < 0 && r > a*(1+1e-9)+1e-300 {
					t.Errorf("q %v σ %v ε %v: remove %v, add %v", q, sigma, eps, r, a)
				}
			}
			if q == 1 || q == 0.001 {
				continue
			}
			d, err := fixedPLD(q, sigma, 1e-3, 1e-12)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < len(d.p); i += 97 {
				eps := float64(d.lo+i) * d.h
				if got, want := d.delta(eps), max(curve(rem, eps), curve(add, eps)); math.Abs(got-want) > 1e-12 {
					t.Errorf("q %v σ %v ε %v: discrete δ %v, max of the pairs' %v", q, sigma, eps, got, want)
				}
			}
		}
	}
}

// A run whose composed loss would span more than maxGridPoints is an
// error for Plan.Epsilon and an unbounded ε for EpsilonAfter.
func TestPLDTooWide(t *testing.T) {
	p := Plan{SampleRate: 0.5, Steps: 1 << 40, Delta: 1e-5}
	if _, err := p.Epsilon(1); err == nil || !strings.HasPrefix(err.Error(), "the composed privacy loss spans more than") {
		t.Errorf("error %v", err)
	}
	a, err := NewPLDAccountant(Mechanism{Sigma: 1, SampleRate: 0.5}, 1e-5, 0, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	if g := a.EpsilonAfter(1 << 40); !math.IsInf(g.Epsilon, 1) {
		t.Errorf("EpsilonAfter: %+v", g)
	}
}

// ε after 100,000 steps (the target: under a second), and RDP's
// for the first run as the same-run peer.
func BenchmarkPLDEpsilon100k(b *testing.B) {
	b.Run("rdp_poisson_q0.01_sigma1", func(b *testing.B) {
		for b.Loop() {
			if _, err := (Plan{Accounting: RDP, SampleRate: 0.01, Steps: 100000, Delta: 1e-5}).Epsilon(1); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, m := range []Mechanism{{Sigma: 1, SampleRate: 0.01}, {Sigma: 0.6, SampleRate: 0.004}, {Sigma: 1, SampleRate: 0.01, Sampling: Fixed}} {
		b.Run(fmt.Sprintf("%v_q%g_sigma%g", m.Sampling, m.SampleRate, m.Sigma), func(b *testing.B) {
			for b.Loop() {
				a, err := NewPLDAccountant(m, 1e-5, 0, 100000)
				if err != nil {
					b.Fatal(err)
				}
				a.EpsilonAfter(100000)
			}
		})
	}
}
