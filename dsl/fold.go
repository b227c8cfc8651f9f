package dsl

import "github.com/fibergen/fibergen/lang"

// binaryOps are the operations of the binary operators.
var binaryOps = map[Token]lang.Op{ADD: lang.Add, SUB: lang.Sub, MUL: lang.Mul, QUO: lang.Div, POW: lang.Pow}

// Op is the operation of a binary operator token, or 0 for any other token.
func (t Token) Op() lang.Op { return binaryOps[t] }

// fold computes a binary operation or a built-in call on float64 constants
// with the semantics fibergen gives it on every target (lang.Eval64).
func fold(op lang.Op, args ...float64) float64 {
	y := 0.0
	if len(args) > 1 {
		y = args[1]
	}
	return lang.Eval64(op, args[0], y)
}
