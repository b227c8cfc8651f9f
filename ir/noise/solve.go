package noise

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/poly"
)

// The bounds of the symbolic solution. A model with more states, or a
// solution in which some rational function grows past MaxSymbolicTerms
// terms, is solved numerically instead: exactly, in rational arithmetic, on
// the host at the hypers in use (gain.SteadyGain).
const (
	MaxSymbolicStates = 4
	MaxSymbolicTerms  = 150
)

// Gain is the steady-state attenuation of one state: the solution Σ of the
// Lyapunov equation Σ = M Σ Mᵀ + b bᵀ of its noise model, and A = Σ[t][t]
// for the state's index t in z.
type Gain struct {
	Model   *Model
	Symbols []*ir.Value   // the variables of the fractions
	Sigma   [][]poly.Frac // nil when the solution is numeric
	A       poly.Frac     // valid when Sigma is not nil
	Numeric string        // why the solution is numeric ("" when it is symbolic)
	// Conditions hold fractions that are all positive exactly where M is
	// stable (Jury's conditions on each block of its characteristic
	// polynomial); StabilityNote says what they leave to the numeric check.
	Conditions    []poly.Frac
	StabilityNote string
}

// ErrNoSteadyState says that the Lyapunov equation has no solution for any
// hypers: the filter has an eigenvalue on the unit circle for every setting.
var ErrNoSteadyState = errors.New("the noise variance grows without bound for every value of the hypers (the Lyapunov equation has no solution)")

// Solve derives the attenuation of model m, whose fractions use symbols.
func Solve(m *Model, symbols []*ir.Value) (*Gain, error) {
	g := &Gain{Model: m, Symbols: symbols}
	conds, note := stabilityConditions(m.M)
	g.Conditions, g.StabilityNote = conds, note
	if len(m.States) > MaxSymbolicStates {
		g.Numeric = fmt.Sprintf("its model has %d states, more than the %d fibergen solves symbolically", len(m.States), MaxSymbolicStates)
		return g, nil
	}
	sigma, err := poly.Lyapunov(m.M, m.B, MaxSymbolicTerms)
	switch {
	case errors.Is(err, poly.ErrTooLarge):
		g.Numeric = fmt.Sprintf("its closed form grows past %d terms", MaxSymbolicTerms)
		return g, nil
	case errors.Is(err, poly.ErrSingular):
		return nil, ErrNoSteadyState
	case err != nil:
		return nil, err
	}
	g.Sigma, g.A = sigma, sigma[m.Target][m.Target]
	if !exactInFloat64(g.A) {
		g.Sigma, g.Numeric = nil, "its closed form has coefficients that float64 cannot hold exactly"
	}
	return g, nil
}

// exactInFloat64 reports whether every coefficient of f is an integer of
// at most 2^53 in magnitude, so that the closed form computes with exact
// constants.
func exactInFloat64(f poly.Frac) bool {
	limit := new(big.Int).Lsh(big.NewInt(1), 53)
	for _, p := range []poly.Poly{f.Num, f.Den} {
		for _, t := range p.Terms() {
			if !t.Coef.IsInt() || t.Coef.Num().CmpAbs(limit) > 0 {
				return false
			}
		}
	}
	return true
}
