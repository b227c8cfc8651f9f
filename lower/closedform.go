package lower

import (
	"fmt"
	"math/big"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/noise"
	"github.com/fibergen/fibergen/ir/poly"
)

// ClosedForm returns the closed form of g.A as a DSL expression, or nil when the
// solution is numeric.
func ClosedForm(g *noise.Gain) dsl.Expr {
	if g.Sigma == nil {
		return nil
	}
	return FracExpr(g.A, g.Symbols)
}

// FracString prints a rational function of symbols in DSL syntax (FracExpr).
func FracString(f poly.Frac, symbols []*ir.Value) string {
	return dsl.ExprString(FracExpr(f, symbols))
}

// FracExpr prints a rational function of symbols as a DSL expression:
// numerator / denominator, each a sum of terms in poly's print order with a
// common monomial factored out (alpha * (4 - 2 * alpha - beta)).
func FracExpr(f poly.Frac, symbols []*ir.Value) dsl.Expr {
	num := polyExpr(f.Num, symbols)
	if c, ok := f.Den.Constant(); ok && c.Cmp(big.NewRat(1, 1)) == 0 {
		return num
	}
	return &dsl.BinaryExpr{X: num, Op: dsl.QUO, Y: polyExpr(f.Den, symbols)}
}

// polyExpr prints a polynomial with integer coefficients.
func polyExpr(p poly.Poly, symbols []*ir.Value) dsl.Expr {
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
func termExpr(c *big.Rat, exp []int, symbols []*ir.Value) dsl.Expr {
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

// symbolExpr is a symbol as a DSL expression: a hyper's name, or the
// expression an opaque symbol stands for, as ExprString prints it (its
// output parses back to the same value); nil if it does not parse.
func symbolExpr(v *ir.Value) dsl.Expr {
	if v.Op == ir.OpHyper {
		return &dsl.Ident{Name: v.Name}
	}
	x, err := dsl.ParseExpr(ir.ExprString(v))
	if err != nil {
		return nil
	}
	return x
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

// ConditionStrings prints conditions as "… > 0".
func ConditionStrings(conds []poly.Frac, symbols []*ir.Value) []string {
	out := make([]string, len(conds))
	for i, c := range conds {
		out[i] = FracString(c, symbols) + " > 0"
	}
	return out
}
