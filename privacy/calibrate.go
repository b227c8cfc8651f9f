package privacy

import (
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
// guarantee it gives. It never overshoots: it bisects log σ keeping the
// invariant that ε(hi) <= target, and returns hi. A target that even
// σ = MaxSigma misses, or that σ = MinSigma already meets, is an error.
func (p Plan) Sigma(target float64) (float64, Guarantee, error) {
	if !(target > 0) || math.IsInf(target, 1) {
		return 0, Guarantee{}, fmt.Errorf("epsilon %v: want a finite value > 0", target)
	}
	lo, hi, g, err := p.bracketSigma(target)
	if err != nil {
		return 0, Guarantee{}, err
	}
	for hi > lo*(1+SigmaTolerance) {
		mid := math.Sqrt(lo * hi)
		gm, err := p.Epsilon(mid)
		switch {
		case err != nil:
			return 0, Guarantee{}, err
		case gm.Epsilon <= target:
			hi, g = mid, gm
		default:
			lo = mid
		}
	}
	return hi, g, nil
}

// bracketSigma returns lo < hi, at most a factor 2 apart, with
// ε(lo) > target >= ε(hi), and the guarantee at hi, searching from σ = 1.
func (p Plan) bracketSigma(target float64) (lo, hi float64, g Guarantee, err error) {
	if g, err = p.Epsilon(1); err != nil {
		return 0, 0, g, err
	}
	if g.Epsilon <= target {
		return p.bracketDown(target, g)
	}
	return p.bracketUp(target)
}

// bracketUp doubles σ from 1, which misses the target, until it meets it.
func (p Plan) bracketUp(target float64) (lo, hi float64, g Guarantee, err error) {
	for lo, hi = 1, 2; ; lo, hi = hi, hi*2 {
		hi = min(hi, MaxSigma)
		if g, err = p.Epsilon(hi); err != nil || g.Epsilon <= target {
			return lo, hi, g, err
		}
		if hi == MaxSigma {
			return 0, 0, g, fmt.Errorf("epsilon %g is out of reach: even sigma = %g gives epsilon %.6g", target, MaxSigma, g.Epsilon)
		}
	}
}

// bracketDown halves σ from 1, which meets the target with guarantee
// g1, until it misses it.
func (p Plan) bracketDown(target float64, g1 Guarantee) (lo, hi float64, g Guarantee, err error) {
	for hi, g = 1, g1; ; hi, g = lo, g1 {
		lo = max(hi/2, MinSigma)
		if g1, err = p.Epsilon(lo); err != nil || g1.Epsilon > target {
			return lo, hi, g, err
		}
		if lo == MinSigma {
			return 0, 0, g, fmt.Errorf("epsilon %g is met even by sigma = %g, the smallest searched", target, MinSigma)
		}
	}
}
