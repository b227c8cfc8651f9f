package privacy

import (
	"fmt"
	"math"
	"sync"

	"github.com/fibergen/fibergen/corrnoise"
)

// A Cyclic run (docs/privacy.md, "Fixed batches and correlated noise")
// adds to the clipped mean gradients x of its steps the noise σ_w·C⁻¹z, z
// fresh standard normal draws and C the strategy of its noise filter (the
// identity for independent noise): it releases a post-processing of
// C x + σ_w z, one Gaussian mechanism over the whole run whose
// sensitivity is that of C under the run's participation, each example in
// one batch of every MinSep steps. Its first t steps are the same with the
// first t rows of C, so the ε they spend is that of the Gaussian mechanism
// with μ = sensitivity(t)/σ: computed exactly (Balle and Wang 2018) under
// PLD, from the Gaussian's RDP under RDP. No amplification by sampling is
// claimed: the batches are fixed.

// MaxStrategySteps bounds the run whose strategy a Cyclic plan holds: 2^24
// steps, 128 MiB of coefficients.
const MaxStrategySteps = 1 << 24

// GaussianDelta returns the δ(ε) of the Gaussian mechanism whose
// sensitivity is mu times its noise standard deviation, exactly (Balle
// and Wang 2018, "Improving the Gaussian mechanism for differential
// privacy", Theorem 8): Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ), in log space.
func GaussianDelta(mu, eps float64) float64 {
	switch {
	case math.IsNaN(mu) || math.IsNaN(eps):
		return 1 // nothing is guaranteed
	case mu <= 0:
		return 0
	}
	return math.Exp(logSub(logPhi(mu/2-eps/mu), eps+logPhi(-mu/2-eps/mu)))
}

// logPhi returns log Φ(x), Φ the standard normal distribution function.
func logPhi(x float64) float64 { return logErfc(-x/math.Sqrt2) - math.Ln2 }

// GaussianEpsilon returns the smallest ε, to a relative 1e-12, of an (ε,
// delta) guarantee of the Gaussian mechanism with sensitivity mu times its
// noise standard deviation (GaussianDelta falls as ε grows): the upper end
// of the bisection, so never below the ε of GaussianDelta, which is exact
// to about 1e-12 relatively for μ ≥ 0.01 and loses digits to cancellation
// below (1e-8 relatively at μ = 1e-5, checked against 50-digit arithmetic),
// where ε is itself below 1e-3.
func GaussianEpsilon(mu, delta float64) float64 {
	if GaussianDelta(mu, 0) <= delta {
		return 0
	}
	hi := 1.0
	for GaussianDelta(mu, hi) > delta {
		hi *= 2
	}
	lo := hi / 2
	if hi == 1 {
		lo = 0
	}
	for hi-lo > 1e-12*hi {
		if mid := (lo + hi) / 2; GaussianDelta(mu, mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// gaussianGuarantee returns the guarantee of the Gaussian mechanism with
// sensitivity mu times its noise standard deviation at delta: exact under
// PLD, and under RDP the conversion of its RDP α·μ²/2 (minimised over
// orders).
func gaussianGuarantee(acc Accounting, orders []float64, mu, delta float64) Guarantee {
	if acc == PLD {
		return Guarantee{Epsilon: GaussianEpsilon(mu, delta), Delta: delta}
	}
	g, err := EpsilonFromRDP(orders, gaussianRDP(orders, mu), delta)
	if err != nil { // a NaN μ: nothing is guaranteed
		return Guarantee{Epsilon: math.Inf(1), Delta: delta}
	}
	return g
}

// gaussianRDP returns the RDP α·μ²/2 of the Gaussian mechanism at each order.
func gaussianRDP(orders []float64, mu float64) []float64 {
	rdp := make([]float64, len(orders))
	for i, a := range orders {
		rdp[i] = a * mu * mu / 2
	}
	return rdp
}

// gaussianDeltaFor is gaussianGuarantee solved for δ at eps.
func gaussianDeltaFor(acc Accounting, orders []float64, mu, eps float64) float64 {
	if acc == PLD {
		return GaussianDelta(mu, eps)
	}
	return DeltaFromRDP(orders, gaussianRDP(orders, mu), eps)
}

// CyclicAccountant reports the ε that the first steps of a Cyclic run
// spend (see above). Before the planned horizon it reports at the next of
// Milestones evenly spaced steps, as the PLD accountant does: the
// sensitivity only grows with the steps, so that is an upper bound, and a
// run computes at most Milestones sensitivities.
type CyclicAccountant struct {
	sigma, delta float64
	accounting   Accounting
	orders       []float64
	strategy     []float64 // C's coefficients over the horizon at least; nil: C = I
	minSep       int
	horizon      int

	mu   sync.Mutex
	sens map[int]float64 // sensitivity after a number of steps, each computed once
}

// newCyclicAccountant returns p's accountant at noise multiplier sigma.
func (p Plan) newCyclicAccountant(sigma float64) (*CyclicAccountant, error) {
	if !(sigma > 0) || math.IsInf(sigma, 1) {
		return nil, fmt.Errorf("sigma %v: want a finite value > 0", sigma)
	}
	orders := p.Orders
	if orders == nil {
		orders = DefaultOrders()
	}
	if err := checkOrders(orders); err != nil {
		return nil, err
	}
	return &CyclicAccountant{sigma: sigma, delta: p.Delta, accounting: p.Accounting, orders: orders,
		strategy: p.Strategy, minSep: p.MinSep, horizon: p.Steps}, nil
}

// Sensitivity returns the ℓ2 sensitivity of the run's first steps, in
// units of one participation's (Sampling.Sensitivity), and whether it is
// exact rather than an upper bound (corrnoise.Sensitivity).
func (a *CyclicAccountant) Sensitivity(steps int) (float64, bool, error) {
	b := min(a.minSep, steps)
	if a.strategy == nil { // independent noise: √k, for runs of any length
		k, err := corrnoise.Participations(steps, b)
		return math.Sqrt(float64(k)), true, err
	}
	if steps > len(a.strategy) {
		return 0, false, fmt.Errorf("%d steps: the strategy the accountant was told covers %d", steps, len(a.strategy))
	}
	s, exact, err := corrnoise.Sensitivity(a.strategy, steps, b)
	if err == nil && (math.IsNaN(s) || math.IsInf(s, 0)) {
		err = fmt.Errorf("the strategy's sensitivity over %d steps is %v: its coefficients overflow float64", steps, s)
	}
	return s, exact, err
}

// EpsilonAfter returns the (ε, δ) guarantee after steps steps; its ε is
// +Inf where the sensitivity cannot be computed.
func (a *CyclicAccountant) EpsilonAfter(steps int) Guarantee {
	if steps > 0 && steps < a.horizon {
		steps = milestone(steps, a.horizon)
	}
	g, _ := a.Epsilon(steps)
	return g
}

// Epsilon returns the exact guarantee after steps steps.
func (a *CyclicAccountant) Epsilon(steps int) (Guarantee, error) {
	if steps <= 0 {
		return Guarantee{Delta: a.delta}, nil
	}
	s, err := a.sensitivityAt(steps)
	if err != nil {
		return Guarantee{Epsilon: math.Inf(1), Delta: a.delta}, err
	}
	return gaussianGuarantee(a.accounting, a.orders, s/a.sigma, a.delta), nil
}

// sensitivityAt is Sensitivity, computed once for each number of steps.
func (a *CyclicAccountant) sensitivityAt(steps int) (float64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.sens[steps]; ok {
		return s, nil
	}
	s, _, err := a.Sensitivity(steps)
	if err != nil {
		return 0, err
	}
	if a.sens == nil {
		a.sens = map[int]float64{}
	}
	a.sens[steps] = s
	return s, nil
}

// cyclicSigma is Sigma for a Cyclic plan: the sensitivity is computed
// once, and the guarantee at each σ is that of a Gaussian mechanism,
// which bisection on log σ narrows to SigmaTolerance.
func (p Plan) cyclicSigma(target float64) (float64, Guarantee, error) {
	a, err := p.newCyclicAccountant(1)
	if err != nil {
		return 0, Guarantee{}, err
	}
	s, err := a.sensitivityAt(p.Steps)
	if err != nil {
		return 0, Guarantee{}, err
	}
	at := func(sigma float64) Guarantee { return gaussianGuarantee(p.Accounting, a.orders, s/sigma, p.Delta) }
	lo, hi := MinSigma, MaxSigma
	switch {
	case at(hi).Epsilon > target:
		return 0, Guarantee{}, outOfReach(target, at(hi).Epsilon)
	case at(lo).Epsilon <= target:
		return 0, Guarantee{}, metByAny(target)
	}
	for hi > lo*(1+SigmaTolerance) {
		if mid := math.Sqrt(lo * hi); at(mid).Epsilon <= target {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, at(hi), nil
}

// Sensitivity returns the ℓ2 sensitivity of a Cyclic plan's whole run, in
// units of one participation's (Sampling.Sensitivity), and whether it is
// exact rather than an upper bound: its noise multiplier σ is a Gaussian
// mechanism's with μ = sensitivity/σ.
func (p Plan) Sensitivity() (float64, bool, error) {
	if p.Sampling != Cyclic {
		return 0, false, fmt.Errorf("the sensitivity of a run is that of one step under %s sampling", p.Sampling)
	}
	if err := p.checkRun(); err != nil { // δ is not needed (DeltaAt asks for it)
		return 0, false, err
	}
	a, err := p.newCyclicAccountant(1)
	if err != nil {
		return 0, false, err
	}
	return a.Sensitivity(p.Steps)
}
