package privacy

import (
	"cmp"
	"errors"
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
	// Cyclic only: the steps between an example's batches (⌈N/B⌉), and
	// the strategy C of a correlated-noise optimizer's factorization, its
	// Toeplitz coefficients over the run (ir.Func.StrategyCoefficients),
	// nil for independent noise.
	MinSep   int
	Strategy []float64
}

// Epsilon returns the guarantee of p's run with noise multiplier sigma.
func (p Plan) Epsilon(sigma float64) (Guarantee, error) {
	a, err := p.Accountant(sigma)
	if err != nil {
		return Guarantee{}, err
	}
	switch a := a.(type) {
	case *PLDAccountant:
		return a.Epsilon(p.Steps)
	case *CyclicAccountant:
		return a.Epsilon(p.Steps)
	}
	return a.EpsilonAfter(p.Steps), nil
}

// DeltaAt returns the smallest δ of an (eps, δ) guarantee that p's run with
// noise multiplier sigma gives; p.Delta is not used. Under RDP it is the
// conversion of EpsilonFromRDP solved for δ, minimized over the orders;
// under PLD the hockey-stick curve of the composed PLD at eps (deltaPLD),
// an upper bound on the run's δ as the PLD accountant's ε is on its ε.
func (p Plan) DeltaAt(sigma, eps float64) (float64, error) {
	if !(eps >= 0) || math.IsInf(eps, 1) {
		return 0, fmt.Errorf("epsilon %v: want a finite value >= 0", eps)
	}
	if err := p.checkRun(); err != nil {
		return 0, err
	}
	if p.Sampling == Cyclic {
		return p.deltaCyclic(sigma, eps)
	}
	m := Mechanism{Sigma: sigma, SampleRate: p.SampleRate, Sampling: p.Sampling, Series: p.Series}
	if p.Accounting == RDP {
		return p.deltaRDP(m, eps)
	}
	return p.deltaPLD(m, eps)
}

// deltaTries bounds the compositions deltaPLD computes.
const deltaTries = 8

// deltaPLD is DeltaAt under PLD. The tails the discretisation cuts are
// sized by a tail budget s (the accountant's δ): they add at most 10⁻³·s
// to the δ found, and only ever raise it, so every δ found is an upper
// bound, within 10⁻³·s of the discretised curve. It starts at s = 0.1
// and sizes each next try to the δ the last one found (s = δ), until a
// δ is at least s/2 (the tails then add at most 2·10⁻³ of it); the
// grids grow only as far as those of the PLD accountant at that δ, which
// Epsilon computes at the same δ. Where a finer try is beyond the PLD
// accountant (ErrBeyondPLD) or the tries run out, the last δ found, a
// looser upper bound, is the answer.
func (p Plan) deltaPLD(m Mechanism, eps float64) (float64, error) {
	size, found := 0.1, math.NaN()
	for range deltaTries {
		a, err := NewPLDAccountant(m, size, p.PLDInterval(m.Sigma), p.Steps)
		var d float64
		if err == nil {
			d, err = a.DeltaAfter(p.Steps, eps)
		}
		switch {
		case err != nil && !math.IsNaN(found) && errors.Is(err, ErrBeyondPLD):
			return found, nil
		case err != nil:
			return d, err
		case d >= size/2 || d <= 0 || size <= minDeltaSize:
			return d, nil
		}
		found, size = d, max(d, minDeltaSize)
	}
	return found, nil
}

// minDeltaSize is the smallest tail budget deltaPLD sizes to: below it
// the tails' rounding floor (roundingFloor) dominates anyway.
const minDeltaSize = 1e-290

// deltaRDP is DeltaAt under RDP.
func (p Plan) deltaRDP(m Mechanism, eps float64) (float64, error) {
	orders := p.Orders
	if orders == nil {
		orders = DefaultOrders()
	}
	rdp, err := m.RDP(orders)
	if err != nil {
		return 0, err
	}
	for i := range rdp {
		rdp[i] *= float64(p.Steps)
	}
	return DeltaFromRDP(orders, rdp, eps), nil
}

// PLDInterval is the loss grid spacing of p's PLD accountant at noise
// multiplier sigma: p.Interval, or Interval of the mechanism.
func (p Plan) PLDInterval(sigma float64) float64 {
	return cmp.Or(p.Interval, Interval(Mechanism{Sigma: sigma, SampleRate: p.SampleRate}))
}

// Accountant returns an Accountant for p's mechanism with noise
// multiplier sigma, to report the ε spent after any number of steps. A
// PLD accountant plans for p.Steps: it reports steps short of them at
// Milestones (PLDAccountant.EpsilonAfter) and composes up to 2^53.
func (p Plan) Accountant(sigma float64) (Accountant, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if p.Sampling == Cyclic {
		return p.newCyclicAccountant(sigma)
	}
	m := Mechanism{Sigma: sigma, SampleRate: p.SampleRate, Sampling: p.Sampling, Series: p.Series}
	if p.Accounting == RDP {
		a, err := NewRDPAccountant(m, p.Delta, p.Orders)
		if err != nil {
			return nil, err
		}
		return a, nil
	}
	a, err := NewPLDAccountant(m, p.Delta, p.PLDInterval(sigma), p.Steps)
	if err != nil {
		return nil, err
	}
	a.horizon = p.Steps
	return a, nil
}

// check checks p's fields (the orders are checked with the mechanism).
func (p Plan) check() error {
	if !(p.Delta > 0 && p.Delta < 1) || math.IsNaN(p.Delta) {
		return fmt.Errorf("delta %v: want a value in (0, 1)", p.Delta)
	}
	return p.checkRun()
}

// checkRun checks p's fields but Delta.
func (p Plan) checkRun() error {
	switch {
	case !(p.SampleRate > 0 && p.SampleRate <= 1):
		return fmt.Errorf("sample rate %v: want a value in (0, 1]", p.SampleRate)
	case p.Steps < 1 || p.Steps > MaxSteps:
		return fmt.Errorf("%d steps: want 1 to 2^53", p.Steps)
	case p.Accounting != PLD && p.Accounting != RDP:
		return fmt.Errorf("unknown accounting %v", p.Accounting)
	case p.Sampling == Cyclic && p.MinSep < 1:
		return fmt.Errorf("minimum separation %d: want at least 1 step between an example's batches", p.MinSep)
	case p.Strategy != nil && p.Sampling.CheckCorrelated() != nil:
		return p.Sampling.CheckCorrelated()
	case p.Strategy != nil && len(p.Strategy) < p.Steps:
		return fmt.Errorf("the strategy has %d coefficients: want one for each of the %d steps", len(p.Strategy), p.Steps)
	}
	return nil
}

// deltaCyclic is DeltaAt for a Cyclic plan.
func (p Plan) deltaCyclic(sigma, eps float64) (float64, error) {
	a, err := p.newCyclicAccountant(sigma)
	if err != nil {
		return 0, err
	}
	s, err := a.sensitivityAt(p.Steps)
	if err != nil {
		return 0, err
	}
	return gaussianDeltaFor(p.Accounting, a.orders, s/sigma, eps), nil
}
