package dsl

import "github.com/fibergen/fibergen/lang"

// binaryOps are the operations of the binary operators.
var binaryOps = map[Token]lang.Op{ADD: lang.Add, SUB: lang.Sub, MUL: lang.Mul, QUO: lang.Div, POW: lang.Pow,
	LSS: lang.Lt, LEQ: lang.Le, GTR: lang.Gt, GEQ: lang.Ge, EQL: lang.Eq, NEQ: lang.Ne}

// Op is the operation of a binary operator token, or 0 for any other token.
func (t Token) Op() lang.Op { return binaryOps[t] }

// fold computes a binary operation or a built-in call on float64 constants
// with the semantics fibergen gives it on every target (lang.Eval64).
func fold(op lang.Op, args ...float64) float64 { return lang.EvalN(op, args...) }
