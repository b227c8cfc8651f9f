package ir

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir/poly"
)

// The bounds of the symbolic solution. A model with more states, or a
// solution in which some rational function grows past MaxSymbolicTerms
// terms, is solved numerically instead: exactly, in rational arithmetic, on
// the host at the hypers in use (SteadyGain).
const (
	MaxSymbolicStates = 4
	MaxSymbolicTerms  = 150
)

// Gain is the steady-state attenuation of one state: the solution Σ of the
// Lyapunov equation Σ = M Σ Mᵀ + b bᵀ of its noise model, and A = Σ[t][t]
// for the state's index t in z.
type Gain struct {
	Model   *NoiseModel
	Symbols []*Value      // the variables of the fractions
	Sigma   [][]poly.Frac // nil when the solution is numeric
	A       poly.Frac     // valid when Sigma is not nil
	Numeric string        // why the solution is numeric ("" when it is symbolic)
	// Stability holds conditions, each "… > 0", that together say that M is
	// stable (Jury's conditions on each block of its characteristic
	// polynomial); StabilityNote says what they leave to the numeric check.
	Stability     []string
	StabilityNote string
}

// ErrNoSteadyState says that the Lyapunov equation has no solution for any
// hypers: the filter has an eigenvalue on the unit circle for every setting.
var ErrNoSteadyState = errors.New("the noise variance grows without bound for every value of the hypers (the Lyapunov equation has no solution)")

// Solve derives the attenuation of model m, whose fractions use symbols.
func Solve(m *NoiseModel, symbols []*Value) (*Gain, error) {
	g := &Gain{Model: m, Symbols: symbols}
	conds, note := stabilityConditions(m.M)
	g.Stability, g.StabilityNote = ConditionStrings(conds, symbols), note
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

// Expr returns the closed form of A as a DSL expression, or nil when the
// solution is numeric.
func (g *Gain) Expr() dsl.Expr {
	if g.Sigma == nil {
		return nil
	}
	return FracExpr(g.A, g.Symbols)
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

// FracExpr prints a rational function of symbols as a DSL expression:
// numerator / denominator, each a sum of terms in poly's print order with a
// common monomial factored out (alpha * (4 - 2 * alpha - beta)).
func FracExpr(f poly.Frac, symbols []*Value) dsl.Expr {
	num := polyExpr(f.Num, symbols)
	if c, ok := f.Den.Constant(); ok && c.Cmp(big.NewRat(1, 1)) == 0 {
		return num
	}
	return &dsl.BinaryExpr{X: num, Op: dsl.QUO, Y: polyExpr(f.Den, symbols)}
}

// polyExpr prints a polynomial with integer coefficients.
func polyExpr(p poly.Poly, symbols []*Value) dsl.Expr {
	terms := p.Terms()
	if len(terms) == 0 {
		return &dsl.NumberLit{Lit: "0"}
	}
	var common []int
	if len(terms) > 1 {
		common = commonExponents(terms)
	}
	var sum dsl.Expr
	for _, t := range terms {
		exp := make([]int, len(t.Exp))
		for i, e := range t.Exp {
			exp[i] = e - at(common, i)
		}
		x := termExpr(new(big.Rat).Abs(t.Coef), exp, symbols)
		switch neg := t.Coef.Sign() < 0; {
		case sum == nil && neg:
			sum = &dsl.UnaryExpr{Op: dsl.SUB, X: x}
		case sum == nil:
			sum = x
		case neg:
			sum = &dsl.BinaryExpr{X: sum, Op: dsl.SUB, Y: x}
		default:
			sum = &dsl.BinaryExpr{X: sum, Op: dsl.ADD, Y: x}
		}
	}
	if isOne(common) {
		return sum
	}
	return &dsl.BinaryExpr{X: termExpr(big.NewRat(1, 1), common, symbols), Op: dsl.MUL, Y: sum}
}

// commonExponents is the monomial that divides every term.
func commonExponents(terms []poly.Term) []int {
	common := append([]int(nil), terms[0].Exp...)
	for _, t := range terms[1:] {
		for i := range common {
			common[i] = min(common[i], at(t.Exp, i))
		}
	}
	return common
}

func at(exp []int, i int) int {
	if i < len(exp) {
		return exp[i]
	}
	return 0
}

func isOne(exp []int) bool {
	for _, e := range exp {
		if e != 0 {
			return false
		}
	}
	return true
}

// termExpr prints c * x_0 ** e_0 * ... with c a rational constant; a
// coefficient of 1 is left out unless the term is constant.
func termExpr(c *big.Rat, exp []int, symbols []*Value) dsl.Expr {
	var x dsl.Expr
	if c.Cmp(big.NewRat(1, 1)) != 0 || isOne(exp) {
		x = ratExpr(c)
	}
	for i, e := range exp {
		if e == 0 {
			continue
		}
		f := symbolExpr(symbols[i])
		if e > 1 {
			f = &dsl.BinaryExpr{X: f, Op: dsl.POW, Y: &dsl.NumberLit{Lit: fmt.Sprint(e), Value: float64(e)}}
		}
		if x == nil {
			x = f
		} else {
			x = &dsl.BinaryExpr{X: x, Op: dsl.MUL, Y: f}
		}
	}
	return x
}

// symbolExpr prints a symbol: a hyper's name, or the expression an opaque
// symbol stands for.
func symbolExpr(v *Value) dsl.Expr {
	if v.Op == OpHyper {
		return &dsl.Ident{Name: v.Name}
	}
	return toDSL(v)
}

// ratExpr prints a non-negative rational constant: an integer, or p / q.
func ratExpr(c *big.Rat) dsl.Expr {
	num := &dsl.NumberLit{Lit: c.Num().String()}
	num.Value, _ = new(big.Float).SetInt(c.Num()).Float64()
	if c.IsInt() {
		return num
	}
	den := &dsl.NumberLit{Lit: c.Denom().String()}
	den.Value, _ = new(big.Float).SetInt(c.Denom()).Float64()
	return &dsl.BinaryExpr{X: num, Op: dsl.QUO, Y: den}
}
