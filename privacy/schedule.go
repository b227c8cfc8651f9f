package privacy

import (
	"fmt"
	"math"
)

// Schedule is a training run described as a trainer is configured: a
// dataset of DatasetSize examples, batches of BatchSize (the expected
// size for Poisson sampling), Epochs passes. It is what the runtime
// takes to calibrate its noise and report the ε spent.
type Schedule struct {
	DatasetSize int     // N >= 1
	BatchSize   int     // B in [1, N]
	Epochs      float64 // > 0; need not be whole
	Delta       float64 // 0 means DefaultDelta(N)
	Sampling    Sampling
	Accounting  Accounting
	Series      Series    // RDP: fractional orders of Poisson sampling
	Orders      []float64 // RDP: nil for DefaultOrders()
	// Strategy is, for Cyclic sampling, the strategy of a correlated-noise
	// optimizer's factorization over the run (Plan.Strategy); the runtime
	// sets it from the optimizer's noise block.
	Strategy []float64
}

// DefaultDelta returns δ = 1/N^1.1 for a dataset of n examples, the
// paper's choice (FiBeR, Appendix E.2): below 1/N, as δ must be to mean
// anything, by a margin that grows with N.
func DefaultDelta(n int) float64 {
	return math.Pow(float64(n), -1.1)
}

// SampleRate returns q = B/N (0 if N < 1).
func (s Schedule) SampleRate() float64 {
	if s.DatasetSize < 1 {
		return 0
	}
	return float64(s.BatchSize) / float64(s.DatasetSize)
}

// Steps returns the number of steps of the run, Epochs·⌈N/B⌉ rounded
// up: the most steps a data loader takes in that many epochs (a partial
// last batch counts as a step), so that the accounting never counts
// fewer steps than are run. Opacus counts ⌊Epochs·N/B⌋, which is never
// more. A product within 1e-9 of a whole number is that number, so that
// 0.1 epochs of 30 batches is 3 steps, not 4. It returns 0 for a
// schedule whose fields are out of range and MaxSteps+1 for one that is
// too long.
func (s Schedule) Steps() int {
	if s.DatasetSize < 1 || s.BatchSize < 1 || s.BatchSize > s.DatasetSize || !(s.Epochs > 0) {
		return 0
	}
	t := s.Epochs * float64(s.StepsPerEpoch())
	if r := math.Round(t); math.Abs(t-r) <= 1e-9*r {
		t = r
	}
	if t = math.Ceil(t); t > MaxSteps {
		return MaxSteps + 1
	}
	return int(t)
}

// StepsPerEpoch returns ⌈N/B⌉, the steps of one epoch.
func (s Schedule) StepsPerEpoch() int {
	n := s.DatasetSize / s.BatchSize
	if s.DatasetSize%s.BatchSize != 0 {
		n++
	}
	return n
}

// Plan returns the accountant's view of s, after checking its fields.
func (s Schedule) Plan() (Plan, error) {
	switch {
	case s.DatasetSize < 1:
		return Plan{}, fmt.Errorf("dataset size %d: want at least 1", s.DatasetSize)
	case s.BatchSize < 1 || s.BatchSize > s.DatasetSize:
		return Plan{}, fmt.Errorf("batch size %d: want 1 to the dataset size %d", s.BatchSize, s.DatasetSize)
	case !(s.Epochs > 0) || math.IsInf(s.Epochs, 1):
		return Plan{}, fmt.Errorf("%v epochs: want a finite number > 0", s.Epochs)
	}
	delta := s.Delta
	if delta == 0 && s.DatasetSize < 2 {
		return Plan{}, fmt.Errorf("dataset size %d: the default delta 1/N^1.1 is 1; give a delta", s.DatasetSize)
	}
	if delta == 0 {
		delta = DefaultDelta(s.DatasetSize)
	}
	p := Plan{Sampling: s.Sampling, Accounting: s.Accounting, Series: s.Series, SampleRate: s.SampleRate(), Steps: s.Steps(), Delta: delta, Orders: s.Orders, Strategy: s.Strategy}
	if s.Sampling == Cyclic {
		p.MinSep = s.StepsPerEpoch()
	}
	if err := p.check(); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// SigmaFor returns the smallest noise multiplier (Plan.Sigma) whose
// run spends at most epsilon.
func (s Schedule) SigmaFor(epsilon float64) (float64, error) {
	p, err := s.Plan()
	if err != nil {
		return 0, err
	}
	sigma, _, err := p.Sigma(epsilon)
	return sigma, err
}

// Accountant returns an Accountant for the run with noise multiplier
// sigma, which reports the ε spent after any step.
func (s Schedule) Accountant(sigma float64) (Accountant, error) {
	p, err := s.Plan()
	if err != nil {
		return nil, err
	}
	return p.Accountant(sigma)
}

// NoiseStd returns the standard deviation of the Gaussian noise to add to
// each coordinate of the mean clipped gradient (the sum divided by B)
// when per-example gradients are clipped to norm clip:
// sigma · Sensitivity(clip) / B. Its square is the runtime's sigma_w2.
func (s Schedule) NoiseStd(sigma, clip float64) float64 {
	return sigma * s.Sampling.Sensitivity(clip) / float64(s.BatchSize)
}
