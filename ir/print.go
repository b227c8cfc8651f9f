package ir

import (
	"fmt"
	"math"

	"github.com/fibergen/fibergen/lang"
)

// MaxExprNodes bounds the tree ExprString prints: a value built from shared
// operands (x2 = x1 * x1, x3 = x2 * x2, ...) is a tree exponentially larger
// than its DAG.
const MaxExprNodes = 200

// ExprString prints a uniform value as a DSL expression over hypers, t,
// sigma_w2 and constants, with the fewest parentheses (lang.Text). A
// tree of more than MaxExprNodes nodes is summarized instead.
func ExprString(v *Value) string {
	if !Printable(v) {
		return fmt.Sprintf("(an expression of more than %d operations; see the IR)", MaxExprNodes)
	}
	return exprText(v).S
}

// Printable reports whether ExprString prints v in full: whether its tree
// has at most MaxExprNodes nodes.
func Printable(v *Value) bool { return treeSize(v, map[*Value]int{}) <= MaxExprNodes }

// treeSize counts the nodes of v's expression tree, saturating just past
// MaxExprNodes; memo makes it linear in the DAG.
func treeSize(v *Value, memo map[*Value]int) int {
	if n, ok := memo[v]; ok {
		return n
	}
	n := 1
	for _, a := range v.Args {
		n = min(n+treeSize(a, memo), MaxExprNodes+1)
	}
	memo[v] = n
	return n
}

// exprText prints the expression tree of v.
func exprText(v *Value) lang.Text {
	switch v.Op {
	case OpConst:
		lit := lang.Atom(FormatConst(math.Abs(v.Const), v.Type))
		if math.Signbit(v.Const) && !math.IsNaN(v.Const) {
			return lang.Unary(lit)
		}
		return lit
	case OpHyper, OpLoad, OpScalar:
		return lang.Atom(v.Name)
	case OpReduce, OpReduceMax, OpReduceMin: // the tensor's sum (max, min) of the reduce block's term
		return lang.Call(CombineName(reduceCombines[v.Op]), lang.Atom(v.Name))
	case OpReduceRows, OpReduceCols: // the row (column) sums of the reduce block's term
		return lang.Call(map[Op]string{OpReduceRows: "rowsum", OpReduceCols: "colsum"}[v.Op], lang.Atom(v.Name))
	case OpLinesSum, OpLinesMax, OpLinesMin: // a line value's sum (max, min) over the tensor
		return lang.Call(CombineName(linesCombines[v.Op]), exprText(v.Args[0]))
	case OpNumel, OpRows, OpCols:
		return lang.Atom(v.Op.String())
	case OpStepIndex, OpSigmaW2:
		return lang.Atom(v.Op.String())
	case OpDraw: // the noise block's z
		return lang.Atom("z")
	case OpPrivatize: // g as the step reads it
		return lang.Atom(GradName)
	case OpAtten, OpAttenT:
		return lang.Call(v.Op.String(), lang.Atom(v.Name))
	case OpF32, OpStore:
		return exprText(v.Args[0])
	}
	args := make([]lang.Text, len(v.Args))
	for i, a := range v.Args {
		args[i] = exprText(a)
	}
	switch op := v.Op.lang(); {
	case op == lang.Neg:
		return lang.Unary(args[0])
	case op.Prec() == lang.PrecPow && op != lang.Pow:
		return lang.Call(op.String(), args...)
	default:
		return lang.Binary(op, args[0], args[1])
	}
}
