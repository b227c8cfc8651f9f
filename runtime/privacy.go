package runtime

import (
	"errors"
	"fmt"
	"slices"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/privacy"
)

// Budget configures the DP noise from a privacy target: the run of Epochs
// passes over DatasetSize examples in batches of BatchSize (Poisson sampling
// by default, as the accountant assumes: each example joins each batch
// independently with probability B/N), per-example gradients clipped to
// ClipNorm, must spend at most (Epsilon, Delta); Delta 0 means 1/N^1.1.
type Budget struct {
	Epsilon  float64
	Delta    float64
	ClipNorm float64
	Schedule privacy.Schedule // DatasetSize, BatchSize, Epochs, Sampling
	// Groups and ProportionalNoise clip per group, as DP's do; ClipNorm is
	// then 0, and the noise follows the combined sensitivity √Σ C_g².
	Groups            []ClipGroup
	ProportionalNoise bool
	accountant        privacy.Accountant
	sigma             float64
	stop              chan struct{}   // closed to stop the table's computation (Close, a budget replacing it)
	tabled            <-chan struct{} // closed once the table is computed (or stopped)
}

// SetBudget calibrates the noise multiplier to the smallest σ_DP whose run
// spends at most b.Epsilon (package privacy), sets the DP settings with it,
// and from then on Spent reports the ε spent so far and Step refuses the
// steps past the schedule. It returns σ_DP. For fixed-size batches the
// accountant's σ is relative to the replace-one sensitivity 2C, which the
// noise follows.
//
// An optimizer with a noise block takes only privacy.Cyclic sampling: the
// accountant is told its strategy at its hypers (a budget fixes them, as
// the first step does), and the run is one Gaussian mechanism with the
// factorization's sensitivity; no amplification by sampling is claimed
// for correlated noise.
//
// The budget holds for the whole run, so it is set before the first step
// (a checkpoint carries it into the resumed run), and while it holds the
// DP settings are its own: SetDP and SetNoise are refused.
func (o *Optimizer) SetBudget(b Budget) (float64, error) {
	defer o.lock()()
	if o.t > 0 {
		return 0, fmt.Errorf("runtime: set the privacy budget before the first step (%d taken at other settings); a checkpoint carries it into a resumed run", o.t)
	}
	if b.Schedule.Strategy != nil {
		return 0, errors.New("runtime: the budget's Schedule.Strategy is the optimizer's to set, from its noise block: leave it nil")
	}
	strategy, err := o.strategyFor(o.hypers, b.Schedule)
	if err != nil {
		return 0, err
	}
	b.Schedule.Strategy = strategy
	b.Groups = slices.Clone(b.Groups)
	dp, err := b.calibrate()
	if err != nil {
		return 0, err
	}
	old := o.dp
	o.dp, o.noise = &dp, nil
	o.installBudget(&b, 0)
	o.dpChanged(old)
	o.warnNoNoise() // a calibrated σ_w² that underflows
	return b.sigma, nil
}

// strategyFor is StrategyFor of the optimizer's function.
func (o *Optimizer) strategyFor(h []float64, s privacy.Schedule) ([]float64, error) {
	return StrategyFor(o.prog.Func, h, s)
}

// StrategyFor returns the strategy of fn's noise block at hypers h over
// the steps of schedule s, which the accountant is told
// (privacy.Plan.Strategy): nil without a noise block, for independent
// noise; an error under a sampling that cannot account it, or for a run
// longer than privacy.MaxStrategySteps.
func StrategyFor(fn *ir.Func, h []float64, s privacy.Schedule) ([]float64, error) {
	if fn.Noise == nil {
		return nil, nil
	}
	if err := s.Sampling.CheckCorrelated(); err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	n := s.Steps()
	if n > privacy.MaxStrategySteps {
		return nil, fmt.Errorf("runtime: the schedule plans %d steps: the accountant holds a correlated-noise run's strategy for at most %d", n, privacy.MaxStrategySteps)
	}
	return fn.StrategyCoefficients(h, max(n, 0)), nil
}

// installBudget makes b the optimizer's budget, stopping the table's
// computation of the one it replaces (or of b itself, kept by a Load),
// and starts computing b's table from step from on: under PLD the ε at
// each milestone a run at from steps can still reach and the horizon, in
// the background, once each (the entries b holds already are kept), so
// that Spent reads it and no step, privatization or info composes (the
// accountant's reports are a minimum over its orders under RDP, with
// nothing to tabulate).
func (o *Optimizer) installBudget(b *Budget, from int) {
	o.stopBudget()
	o.budget = b
	if b == nil {
		return
	}
	b.stop = make(chan struct{})
	if pld, ok := b.accountant.(*privacy.PLDAccountant); ok {
		b.tabled = pld.Precompute(from, b.stop)
	}
}

// stopBudget stops the computation of the budget's table, if any.
func (o *Optimizer) stopBudget() {
	if o.budget != nil && o.budget.stop != nil {
		close(o.budget.stop)
		o.budget.stop = nil
	}
}

// calibrate computes the budget's noise multiplier and accountant and
// returns the DP settings it gives.
func (b *Budget) calibrate() (DP, error) {
	if b.Delta != 0 {
		b.Schedule.Delta = b.Delta
	}
	sigma, err := b.Schedule.SigmaFor(b.Epsilon)
	if err != nil {
		return DP{}, fmt.Errorf("runtime: %w", err)
	}
	return b.withSigma(sigma)
}

// withSigma sets the budget's noise multiplier to sigma and its accountant,
// and returns the DP settings it gives: plain arithmetic from sigma, so a
// checkpoint's budget gives back the same bits.
func (b *Budget) withSigma(sigma float64) (DP, error) {
	acc, err := b.Schedule.Accountant(sigma)
	if err != nil {
		return DP{}, fmt.Errorf("runtime: %w", err)
	}
	c := sensitivity(b.ClipNorm, b.Groups)
	std := b.Schedule.NoiseStd(sigma, c) // σ·sensitivity/B
	dp := DP{ClipNorm: b.ClipNorm, NoiseMultiplier: std * float64(b.Schedule.BatchSize) / c, BatchSize: b.Schedule.BatchSize,
		Groups: b.Groups, ProportionalNoise: b.ProportionalNoise}
	if err := dp.check(); err != nil {
		return DP{}, err
	}
	b.accountant, b.sigma = acc, sigma
	return dp, nil
}

// Spent returns the (ε, δ) that the steps taken so far have spent under the
// budget, and false without one: under PLD read from the budget's table
// (installBudget), waiting for the entry only where its computation in
// the background has not reached it yet. It reads the budget and the step
// under the optimizer's lock and asks the accountant after releasing it,
// so that an entry composed or waited for here holds up no step, report
// or Save (the accountant is safe for concurrent use).
func (o *Optimizer) Spent() (privacy.Guarantee, bool) {
	acc, t := o.budgetAt()
	if acc == nil {
		return privacy.Guarantee{}, false
	}
	return acc.EpsilonAfter(t), true
}

// budgetAt returns the budget's accountant, nil without a budget, and the
// steps taken.
func (o *Optimizer) budgetAt() (privacy.Accountant, int) {
	defer o.lock()()
	if o.budget == nil {
		return nil, o.t
	}
	return o.budget.accountant, o.t
}

// checkBudget refuses a step past the budget's schedule.
func (o *Optimizer) checkBudget() error {
	if o.budget == nil || o.t < o.budget.Schedule.Steps() {
		return nil
	}
	return fmt.Errorf("runtime: the privacy budget ε = %v is spent: its schedule plans %d steps", o.budget.Epsilon, o.budget.Schedule.Steps())
}

// AccountantEvaluations returns how many compositions the budget's
// accountant has computed: under PLD one per milestone and the horizon
// at most, whatever the steps and reports (its table); 0 under RDP, whose
// reports compose nothing, or without a budget.
func (o *Optimizer) AccountantEvaluations() int {
	defer o.lock()()
	if o.budget == nil {
		return 0
	}
	if pld, ok := o.budget.accountant.(*privacy.PLDAccountant); ok {
		return pld.Evaluations()
	}
	return 0
}

// BudgetTabled returns a channel closed once the budget's table is
// computed (or its computation stopped); closed already where there is
// nothing to compute.
func (o *Optimizer) BudgetTabled() <-chan struct{} {
	defer o.lock()()
	if o.budget == nil || o.budget.tabled == nil {
		done := make(chan struct{})
		close(done)
		return done
	}
	return o.budget.tabled
}
