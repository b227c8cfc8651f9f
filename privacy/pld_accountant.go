package privacy

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// The range of the loss grid spacing h: Interval chooses at most
// MaxInterval; a spacing given is at least MinInterval.
const (
	MaxInterval = 1e-3
	MinInterval = 1e-9
)

// Interval returns the loss grid spacing h the PLD accountant uses for
// mechanism m: MaxInterval, or a 30th of the standard deviation s of one
// step's privacy loss if that is smaller, but at least MinInterval and
// a 65,536th of one step's loss span.
// Connect the dots moves each step's loss by less than h and its mean by
// at most h²/8, so the composed loss's standard deviation grows by at
// most a factor 1 + 1/60. s is estimated by √min(q²·(e^(1/σ²) - 1),
// 1/σ²): the χ² divergence of the remove pair for small q, the loss's
// own variance for q = 1.
func Interval(m Mechanism) float64 {
	if m.SampleRate == 0 {
		return MaxInterval
	}
	v := min(m.SampleRate*m.SampleRate*math.Expm1(1/(m.Sigma*m.Sigma)), 1/(m.Sigma*m.Sigma))
	h := min(MaxInterval, math.Sqrt(v)/30)
	// A tiny sample rate makes s tiny while a small σ keeps the loss's
	// rare tail long: at most stepPoints points over the span.
	_, hi := gaussianPair{m.SampleRate, m.Sigma, true}.lossRange(1e-16)
	lo, _ := gaussianPair{m.SampleRate, m.Sigma, false}.lossRange(1e-16)
	return max(MinInterval, h, min(MaxInterval, (hi-lo)/stepPoints))
}

// stepPoints bounds the points Interval gives one step's loss span.
const stepPoints = 1 << 16

// Milestones is the number of evenly spaced steps of a planned run at
// which a PLD accountant computes ε for the steps before the end (see
// PLDAccountant.EpsilonAfter).
const Milestones = 100

// PLDAccountant reports the ε spent by steps of one mechanism by privacy
// loss distributions: the discretised PLD of one step (connect the dots,
// pessimistic) composed by FFT, for Poisson sampling under add/remove-one
// adjacency the remove and the add pair each (the larger δ counts), for
// fixed-size sampling under replace-one the pair of fixedPLD.
type PLDAccountant struct {
	steps []lossDist // one step's PLD of each pair
	delta float64
	tail  float64 // mass the compositions of a run may move outward

	horizon int // planned steps; 0: none, every report is exact
	mu      sync.Mutex
	reached map[int]*report // ε at the milestones and the horizon, each computed once
	evals   atomic.Int64    // compositions computed (Evaluations)
}

// report is the ε after a number of steps, which the first to ask
// computes and the others wait for (done closed when it is in).
type report struct {
	done chan struct{}
	eps  float64
	err  error
}

// NewPLDAccountant returns a PLDAccountant for mechanism m, target delta
// and grid spacing interval (0: Interval(m)), for runs of up to maxSteps
// steps (which sizes the tails the discretisation may drop).
func NewPLDAccountant(m Mechanism, delta, interval float64, maxSteps int) (*PLDAccountant, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	if interval == 0 {
		interval = Interval(m)
	}
	switch {
	case !(delta > 0 && delta < 1):
		return nil, fmt.Errorf("delta %v: want a value in (0, 1)", delta)
	case !(interval >= MinInterval && interval <= 1):
		return nil, fmt.Errorf("PLD interval %v: want a value in [%g, 1]", interval, MinInterval)
	case maxSteps < 1 || maxSteps > MaxSteps:
		return nil, fmt.Errorf("%d steps: want 1 to 2^53", maxSteps)
	}
	steps, err := m.plds(interval, stepTail(delta, maxSteps))
	if err != nil {
		return nil, err
	}
	return &PLDAccountant{steps: steps, delta: delta, tail: composeTail(delta)}, nil
}

// stepTail is the mass of P that one step's discretisation leaves beyond
// its grid on either side: above, part of it goes to +∞ and composes to
// at most maxSteps times as much; below, it is moved up. Together with
// the compositions' (composeTail) it adds at most 1e-3·δ to δ.
func stepTail(delta float64, maxSteps int) float64 {
	return 1e-4 * delta / float64(maxSteps)
}

// composeTail is the budget of selfCompose: its compositions move at
// most twice as much (once on either side) to +∞ or up to the bottom of
// their grids.
func composeTail(delta float64) float64 {
	return 4e-4 * delta
}

// plds returns the one-step PLDs of m's dominating pairs.
func (m Mechanism) plds(h, tail float64) ([]lossDist, error) {
	switch {
	case m.SampleRate == 0:
		return []lossDist{{h: h, p: []float64{1}}}, nil
	case m.Sampling == Fixed:
		d, err := fixedPLD(m.SampleRate, m.Sigma, h, tail)
		return []lossDist{d}, err
	}
	var out []lossDist
	for _, remove := range []bool{true, false} {
		d, err := gaussianPair{m.SampleRate, m.Sigma, remove}.pld(h, tail)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Slack bounds how far the ε reported after steps steps may exceed the
// exact one: ε_PLD(δ) <= ε_exact(0.998·δ) + Slack(steps). Connect the
// dots replaces each step's loss l in a grid interval (a, a+h] by a or
// a+h, a coupling under which the replacement exceeds l by at most h²/8
// on average and lies in an interval of length h; by Hoeffding's
// inequality the T replacements add more than T·h²(1+h)/8 +
// h·√(T·ln(1/η)/2) to the composed loss with probability at most η,
// and η = 10⁻³·δ together with the 10⁻³·δ of the tails makes the 0.998.
// It holds for steps up to the accountant's maxSteps, while the tails cut
// stay within their budget (roundingFloor can exceed it for δ below about
// 1e-8 over 10⁵ steps: the report is then still an upper bound). It is a
// worst case; the error measured against the exact Gaussian is far
// smaller (docs/privacy.md).
func (a *PLDAccountant) Slack(steps int) float64 {
	h, t := a.steps[0].h, float64(steps)
	return t*h*h*(1+h)/8 + h*math.Sqrt(t*math.Log(1e3/a.delta)/2)
}

// exactEpsilon returns the ε of steps compositions: the largest over the
// pairs of the smallest ε whose δ is at most a's; an error where the mass
// at +∞ passes a tenth of δ, which only the tail cuts' rounding floor
// makes: ε would then say more about the rounding than about the run.
func (a *PLDAccountant) exactEpsilon(steps int) (float64, error) {
	composed, err := a.composed(steps)
	if err != nil {
		return math.Inf(1), err
	}
	eps := 0.0
	for _, c := range composed {
		if c.inf > a.delta/10 {
			return math.Inf(1), fmt.Errorf("delta %g is below what the PLD accountant resolves after %d steps (%.3g of mass went to +∞ with the rounding): %w", a.delta, steps, c.inf, ErrBeyondPLD)
		}
		eps = max(eps, c.epsilon(a.delta))
	}
	return eps, nil
}

// composed returns the PLD of steps compositions of each pair.
func (a *PLDAccountant) composed(steps int) ([]lossDist, error) {
	out := make([]lossDist, len(a.steps))
	for i, d := range a.steps {
		var err error
		if out[i], err = d.selfCompose(steps, a.tail); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// EpsilonAfter returns the (ε, δ) guarantee after steps steps; its Order
// is 0, and its ε +Inf where Epsilon fails. With a planned horizon
// (Plan.Accountant sets it), a number of steps short of it is reported at
// the next of Milestones evenly spaced steps, an upper bound that costs
// one composition per milestone in a run; at the horizon and beyond the
// report is exact.
func (a *PLDAccountant) EpsilonAfter(steps int) Guarantee {
	if steps > 0 && steps < a.horizon {
		steps = a.milestone(steps)
	}
	g, _ := a.Epsilon(steps)
	return g
}

// Epsilon returns the exact guarantee after steps steps, or an error
// (ErrBeyondPLD) if their privacy loss spans too wide a grid or δ is too
// small for the compositions' rounding. Reports up to the horizon are
// kept, so that a run computes each once: a report another goroutine is
// computing (Precompute's) is waited for, not computed again, and no lock
// is held while one is computed.
func (a *PLDAccountant) Epsilon(steps int) (Guarantee, error) {
	g := Guarantee{Delta: a.delta}
	if steps <= 0 {
		return g, nil
	}
	if steps > a.horizon {
		eps, err := a.evaluate(steps)
		g.Epsilon = eps
		return g, err
	}
	r, mine := a.report(steps)
	if mine {
		a.fill(r, steps)
	}
	<-r.done
	g.Epsilon = r.eps
	return g, r.err
}

// report returns the report of steps, and true where the caller is the
// first to ask and computes it.
func (a *PLDAccountant) report(steps int) (*report, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r, ok := a.reached[steps]; ok {
		return r, false
	}
	if a.reached == nil {
		a.reached = map[int]*report{}
	}
	r := &report{done: make(chan struct{})}
	a.reached[steps] = r
	return r, true
}

// fill computes the report r of steps and closes its channel, whatever
// happens: a panic in the composition becomes the report's error, so that
// no one waiting for it (Spent, under the optimizer's lock) waits forever.
func (a *PLDAccountant) fill(r *report, steps int) {
	defer close(r.done)
	defer func() {
		if p := recover(); p != nil {
			r.err = fmt.Errorf("privacy: the ε after %d steps failed: %v", steps, p)
		}
	}()
	r.eps, r.err = a.evaluate(steps)
}

// evaluate is exactEpsilon, counted (Evaluations).
func (a *PLDAccountant) evaluate(steps int) (float64, error) {
	a.evals.Add(1)
	return a.exactEpsilon(steps)
}

// Evaluations returns how many compositions a has computed: with a
// planned horizon, once each milestone and the horizon at most, however
// often they are reported.
func (a *PLDAccountant) Evaluations() int {
	return int(a.evals.Load())
}

// Precompute computes in the background the ε at every milestone from
// the one EpsilonAfter(from) reports at, in order, through the horizon
// (an accountant without one has nothing to compute), so that the
// reports of a run at from steps and after read them instead of composing
// on the caller's time: a run resumed at from steps never asks for the
// milestones before it. A report asked before its turn is computed by the
// caller (once: the background then waits for it), and one computed
// already is not computed again. It stops early once stop is closed, and
// closes the channel it returns when it is done.
func (a *PLDAccountant) Precompute(from int, stop <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, m := range a.milestones(from) {
			select {
			case <-stop:
				return
			default:
			}
			_, _ = a.Epsilon(m) // an error is kept in the report, for EpsilonAfter to give
		}
	}()
	return done
}

// milestones returns the steps EpsilonAfter reports at from from steps
// on: the milestones at or after from and the horizon, in order; none
// without a horizon.
func (a *PLDAccountant) milestones(from int) []int {
	var out []int
	for m := max(from, 1); m <= a.horizon; m = a.milestone(m) + 1 {
		out = append(out, a.milestone(m))
	}
	return out
}

// DeltaAfter returns the δ of an (ε, δ) guarantee after steps steps: the
// largest over the pairs of the composed PLD's δ(ε). Its tails are sized
// by the accountant's δ: they add at most 10⁻³ of that, so a δ far below
// it is an upper bound only (Plan.DeltaAt sizes them to the answer).
func (a *PLDAccountant) DeltaAfter(steps int, eps float64) (float64, error) {
	if steps <= 0 {
		return 0, nil
	}
	composed, err := a.composed(steps)
	if err != nil {
		return 1, err
	}
	delta := 0.0
	for _, c := range composed {
		delta = max(delta, c.delta(eps))
	}
	return delta, nil
}

// milestone returns the first milestone at or after steps.
func (a *PLDAccountant) milestone(steps int) int { return milestone(steps, a.horizon) }

// milestone returns the first of Milestones evenly spaced steps of a run
// of horizon steps at or after steps (≤ horizon).
func milestone(steps, horizon int) int {
	every := (horizon + Milestones - 1) / Milestones
	return min(horizon, (steps+every-1)/every*every)
}
