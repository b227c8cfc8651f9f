package privacy

import (
	"fmt"
	"math"
)

// MaxSteps is the largest number of steps accepted: 2^53, so that the
// number of steps is exact as a float64 factor of the RDP.
const MaxSteps = 1 << 53

// Plan is a training run as the accountant sees it: Steps steps of the
// Gaussian mechanism on batches sampled at rate SampleRate, reported as
// (ε, Delta)-DP by the Accounting method.
type Plan struct {
	Sampling   Sampling
	Accounting Accounting
	SampleRate float64 // q in (0, 1]
	Steps      int     // T in [1, MaxSteps]
	Delta      float64 // δ in (0, 1)
	// RDP only:
	Series Series    // fractional orders of Poisson sampling
	Orders []float64 // nil: DefaultOrders()
	// PLD only: the loss grid spacing, 0 for Interval(mechanism).
	Interval float64
}

// Epsilon returns the guarantee of p's run with noise multiplier sigma.
func (p Plan) Epsilon(sigma float64) (Guarantee, error) {
	a, err := p.Accountant(sigma)
	if err != nil {
		return Guarantee{}, err
	}
	if pld, ok := a.(*PLDAccountant); ok {
		return pld.Epsilon(p.Steps)
	}
	return a.EpsilonAfter(p.Steps), nil
}

// Accountant returns an Accountant for p's mechanism with noise
// multiplier sigma, to report the ε spent after any number of steps. A
// PLD accountant plans for p.Steps: it reports steps short of them at
// Milestones (PLDAccountant.EpsilonAfter) and composes up to 2^53.
func (p Plan) Accountant(sigma float64) (Accountant, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	m := Mechanism{Sigma: sigma, SampleRate: p.SampleRate, Sampling: p.Sampling, Series: p.Series}
	if p.Accounting == RDP {
		return NewRDPAccountant(m, p.Delta, p.Orders)
	}
	a, err := NewPLDAccountant(m, p.Delta, p.Interval, p.Steps)
	if err != nil {
		return nil, err
	}
	a.horizon = p.Steps
	return a, nil
}

// check checks p's fields (the orders are checked with the mechanism).
func (p Plan) check() error {
	switch {
	case !(p.SampleRate > 0 && p.SampleRate <= 1):
		return fmt.Errorf("sample rate %v: want a value in (0, 1]", p.SampleRate)
	case p.Steps < 1 || p.Steps > MaxSteps:
		return fmt.Errorf("%d steps: want 1 to 2^53", p.Steps)
	case !(p.Delta > 0 && p.Delta < 1) || math.IsNaN(p.Delta):
		return fmt.Errorf("delta %v: want a value in (0, 1)", p.Delta)
	case p.Accounting != PLD && p.Accounting != RDP:
		return fmt.Errorf("unknown accounting %v", p.Accounting)
	}
	return nil
}
