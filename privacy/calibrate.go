package privacy

import (
	"errors"
	"fmt"
	"math"
)

// The range and resolution of the noise multiplier search.
const (
	MinSigma = 1e-6
	MaxSigma = 1e6
	// SigmaTolerance is the relative resolution of Plan.Sigma: the σ it
	// returns meets the target and σ/(1+SigmaTolerance) does not.
	SigmaTolerance = 1e-6
)

// Sigma returns the smallest noise multiplier σ, to a relative
// SigmaTolerance, whose ε over p's run does not exceed target, and the
// guarantee it gives. It never overshoots: it narrows a bracket [lo, hi]
// keeping the invariant that ε(hi) <= target < ε(lo), and returns hi. A
// target that even σ = MaxSigma misses, or that σ = MinSigma already
// meets, is an error.
func (p Plan) Sigma(target float64) (float64, Guarantee, error) {
	if !(target > 0) || math.IsInf(target, 1) {
		return 0, Guarantee{}, fmt.Errorf("epsilon %v: want a finite value > 0", target)
	}
	if p.Sampling == Cyclic {
		if err := p.check(); err != nil {
			return 0, Guarantee{}, err
		}
		return p.cyclicSigma(target)
	}
	lo, hi, g, err := p.bracketSigma(target)
	if err != nil {
		return 0, Guarantee{}, err
	}
	return p.narrow(bracket{lo: lo, hi: hi, g: g, fHi: math.Log(g.Epsilon / target)}, target)
}

// bracket is an interval of σ with ε(hi) = g.Epsilon <= target < ε(lo),
// and log(ε/target) at either end once known (0: not yet).
type bracket struct {
	lo, hi    float64
	g         Guarantee
	fLo, fHi  float64
	lastMoved int // -1: lo, +1: hi, 0: neither yet
}

// narrow shrinks b to a relative width of SigmaTolerance by regula falsi
// on log ε over log σ with the Illinois modification (the end that stays
// twice in a row has its value halved), which takes a handful of
// evaluations where bisection takes twenty: each is a full accounting of
// the run, a fraction of a second for a long PLD one. A point the
// interpolation cannot place well inside the bracket is its geometric
// middle instead.
func (p Plan) narrow(b bracket, target float64) (float64, Guarantee, error) {
	for b.hi > b.lo*(1+SigmaTolerance) {
		mid := b.next()
		gm, err := p.evaluate(mid)
		if err != nil {
			return 0, Guarantee{}, err
		}
		f := math.Log(gm.Epsilon / target)
		if gm.Epsilon <= target {
			b.hi, b.g, b.fHi = mid, gm, f
			b.halve(+1)
		} else {
			b.lo, b.fLo = mid, f
			b.halve(-1)
		}
	}
	return b.hi, b.g, nil
}

// next returns the σ to evaluate next: where the line through the ends'
// (log σ, log ε/target) crosses 0, kept a thousandth of the bracket
// inside it, or the geometric middle while an end's value is unknown or
// infinite (ε = 0 at a large σ).
func (b *bracket) next() float64 {
	xl, xh := math.Log(b.lo), math.Log(b.hi)
	if b.fLo == 0 || b.fHi == 0 || math.IsInf(b.fLo, 0) || math.IsInf(b.fHi, 0) {
		return math.Sqrt(b.lo * b.hi)
	}
	w := xh - xl
	x := xh - b.fHi*w/(b.fHi-b.fLo)
	return math.Exp(min(xh-w/1000, max(xl+w/1000, x)))
}

// halve records which end moved, halving the other end's value when that
// end moved twice in a row (the Illinois step).
func (b *bracket) halve(moved int) {
	if moved == b.lastMoved {
		if moved > 0 {
			b.fLo /= 2
		} else {
			b.fHi /= 2
		}
	}
	b.lastMoved = moved
}

// bracketSigma returns lo < hi, at most a factor 2 apart, with
// ε(lo) > target >= ε(hi), and the guarantee at hi, searching from
// start.
func (p Plan) bracketSigma(target float64) (lo, hi float64, g Guarantee, err error) {
	start := p.start(target)
	if g, err = p.Epsilon(start); err != nil {
		return 0, 0, g, err
	}
	if g.Epsilon <= target {
		return p.bracketDown(target, start, g)
	}
	return p.bracketUp(target, start)
}

// start is where the search for σ begins: 1, or under PLD the σ that RDP
// calibrates, which a PLD search would otherwise reach only after
// evaluations at far smaller σ, whose losses span wide grids; RDP's ε
// is the larger, so that σ usually meets the target already.
func (p Plan) start(target float64) float64 {
	if p.Accounting != PLD {
		return 1
	}
	r := p
	r.Accounting, r.Orders = RDP, nil
	if sigma, _, err := r.Sigma(target); err == nil {
		return sigma
	}
	return 1
}

// bracketUp doubles σ from start, which misses the target, until it meets it.
func (p Plan) bracketUp(target, start float64) (lo, hi float64, g Guarantee, err error) {
	for lo, hi = start, 2*start; ; lo, hi = hi, hi*2 {
		hi = min(hi, MaxSigma)
		if g, err = p.Epsilon(hi); err != nil || g.Epsilon <= target {
			return lo, hi, g, err
		}
		if hi == MaxSigma {
			return 0, 0, g, outOfReach(target, g.Epsilon)
		}
	}
}

// bracketDown halves σ from start, which meets the target with guarantee
// g1, until it misses it.
func (p Plan) bracketDown(target, start float64, g1 Guarantee) (lo, hi float64, g Guarantee, err error) {
	for hi, g = start, g1; ; hi, g = lo, g1 {
		lo = max(hi/2, MinSigma)
		if g1, err = p.evaluate(lo); err != nil || g1.Epsilon > target {
			return lo, hi, g, err
		}
		if lo == MinSigma {
			return 0, 0, g, metByAny(target)
		}
	}
}

// evaluate returns the guarantee at sigma below a σ that meets the
// target: a run there beyond the PLD accountant's reach (its grid too
// wide) counts as missing the target, ε = +Inf.
func (p Plan) evaluate(sigma float64) (Guarantee, error) {
	g, err := p.Epsilon(sigma)
	if errors.Is(err, ErrBeyondPLD) {
		return Guarantee{Epsilon: math.Inf(1), Delta: p.Delta}, nil
	}
	return g, err
}

// outOfReach is the error of a target that σ = MaxSigma misses, by eps.
func outOfReach(target, eps float64) error {
	return fmt.Errorf("epsilon %g is out of reach: even sigma = %g gives epsilon %.6g", target, MaxSigma, eps)
}

// metByAny is the error of a target that σ = MinSigma meets already.
func metByAny(target float64) error {
	return fmt.Errorf("epsilon %g is met even by sigma = %g, the smallest searched", target, MinSigma)
}
