package ir

import (
	"fmt"
	"math"
	"slices"

	"github.com/fibergen/fibergen/dsl"
)

// Pass is one rewrite of a block.
type Pass struct {
	Name string
	Run  func(*Block)
}

// Pipeline is the list of passes Optimize runs, in order.
var Pipeline = []Pass{
	{"fold", FoldConstants},
	{"cse", EliminateCommonSubexpressions},
	{"dce", EliminateDeadCode},
	{"hoist", HoistUniforms},
}

// Optimize runs every pass of Pipeline over every block of f and verifies
// the result after each.
func Optimize(f *Func) error {
	for _, p := range Pipeline {
		for _, b := range f.Blocks() {
			p.Run(b)
		}
		if err := Verify(f); err != nil {
			return fmt.Errorf("after pass %s: %w", p.Name, err)
		}
	}
	return nil
}

// FoldConstants replaces operations whose operands are all constants by
// their value, computed with the target semantics of the operation's type
// (Eval64 or Eval32), so that folding never changes a result bit.
func FoldConstants(b *Block) {
	for _, v := range b.Values {
		if v.Op == OpStore || v.Op.Arity() == 0 || !allConst(v.Args) {
			continue
		}
		v.Const = foldValue(v)
		v.Op, v.Args, v.Uniform = OpConst, nil, true
	}
}

func allConst(args []*Value) bool {
	for _, a := range args {
		if !a.IsConst() {
			return false
		}
	}
	return true
}

func foldValue(v *Value) float64 {
	x, y := v.Args[0].Const, math.NaN()
	if len(v.Args) > 1 {
		y = v.Args[1].Const
	}
	switch {
	case v.Op == OpF32:
		return float64(float32(x))
	case v.Type == F32:
		return float64(Eval32(v.Op, float32(x), float32(y)))
	}
	return Eval64(v.Op, x, y)
}

// EliminateCommonSubexpressions replaces a value by an earlier identical
// one: same op, type, name, constant bits and operands (in either order for
// commutative ops). Stores are never merged.
func EliminateCommonSubexpressions(b *Block) {
	seen := map[string]*Value{}
	repl := map[*Value]*Value{}
	out := b.Values[:0]
	for _, v := range b.Values {
		for i, a := range v.Args {
			if r := repl[a]; r != nil {
				v.Args[i] = r
			}
		}
		if v.Op != OpStore {
			k := cseKey(v)
			if prev := seen[k]; prev != nil {
				repl[v] = prev
				continue
			}
			seen[k] = v
		}
		out = append(out, v)
	}
	b.Values = out
}

func cseKey(v *Value) string {
	ids := make([]int, len(v.Args))
	for i, a := range v.Args {
		ids[i] = a.ID
	}
	if v.Op.IsCommutative() {
		slices.Sort(ids)
	}
	return fmt.Sprintf("%s %s %s %x %v", v.Op, v.Type, v.Name, math.Float64bits(v.Const), ids)
}

// EliminateDeadCode removes values that no store depends on.
func EliminateDeadCode(b *Block) {
	live := map[*Value]bool{}
	for i := len(b.Values) - 1; i >= 0; i-- {
		v := b.Values[i]
		if v.Op == OpStore || live[v] {
			live[v] = true
			for _, a := range v.Args {
				live[a] = true
			}
		}
	}
	b.Values = slices.DeleteFunc(b.Values, func(v *Value) bool { return !live[v] })
}

// HoistUniforms moves every uniform value ahead of all varying values and
// stores, keeping relative order: the block becomes a host part followed by
// a kernel part.
func HoistUniforms(b *Block) {
	host := func(v *Value) bool { return v.Uniform && v.Op != OpStore }
	var out []*Value
	for _, v := range b.Values {
		if host(v) {
			out = append(out, v)
		}
	}
	for _, v := range b.Values {
		if !host(v) {
			out = append(out, v)
		}
	}
	b.Values = out
}

// HostScalars returns the uniform values the kernel part of b reads: the
// per-step scalars the host computes and passes as kernel parameters.
// Constants are not among them; the kernel holds them as immediates.
func HostScalars(b *Block) []*Value {
	used := map[*Value]bool{}
	for _, v := range b.Values {
		if v.Uniform && v.Op != OpStore {
			continue
		}
		for _, a := range v.Args {
			if a.Uniform && !a.IsConst() {
				used[a] = true
			}
		}
	}
	var out []*Value
	for _, v := range b.Values {
		if used[v] {
			out = append(out, v)
		}
	}
	return out
}

// DependsOnStep reports whether a uniform value changes from step to step:
// whether it reads t or sigma_w2 rather than hypers and constants only.
func DependsOnStep(v *Value) bool { return dependsOnStep(v, map[*Value]bool{}) }

// dependsOnStep visits each value once: seen holds the values already found
// not to depend on the step, so shared operands cost nothing the second time.
func dependsOnStep(v *Value, seen map[*Value]bool) bool {
	if v.Op == OpStepIndex || v.Op == OpSigmaW2 {
		return true
	}
	if seen[v] {
		return false
	}
	seen[v] = true
	for _, a := range v.Args {
		if dependsOnStep(a, seen) {
			return true
		}
	}
	return false
}

// MaxExprNodes bounds the tree ExprString prints: a value built from shared
// operands (x2 = x1 * x1, x3 = x2 * x2, ...) is a tree exponentially larger
// than its DAG.
const MaxExprNodes = 200

// ExprString prints a uniform value as a DSL expression over hypers, t,
// sigma_w2 and constants, with the fewest parentheses (dsl.ExprString). A
// tree of more than MaxExprNodes nodes is summarized instead.
func ExprString(v *Value) string {
	if n := treeSize(v, map[*Value]int{}); n > MaxExprNodes {
		return fmt.Sprintf("(an expression of more than %d operations; see the IR)", MaxExprNodes)
	}
	return dsl.ExprString(toDSL(v))
}

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

// toDSL rebuilds the expression tree of v.
func toDSL(v *Value) dsl.Expr {
	switch v.Op {
	case OpConst:
		lit := &dsl.NumberLit{Lit: FormatConst(math.Abs(v.Const), v.Type), Value: math.Abs(v.Const)}
		if math.Signbit(v.Const) && !math.IsNaN(v.Const) {
			return &dsl.UnaryExpr{Op: dsl.SUB, X: lit}
		}
		return lit
	case OpHyper, OpLoad:
		return &dsl.Ident{Name: v.Name}
	case OpStepIndex, OpSigmaW2:
		return &dsl.Ident{Name: v.Op.String()}
	case OpAtten, OpAttenT:
		return &dsl.CallExpr{Fun: &dsl.Ident{Name: v.Op.String()}, Args: []dsl.Expr{&dsl.Ident{Name: v.Name}}}
	case OpF32, OpStore:
		return toDSL(v.Args[0])
	case OpNeg:
		return &dsl.UnaryExpr{Op: dsl.SUB, X: toDSL(v.Args[0])}
	case OpSqrt, OpAbs, OpMin, OpMax:
		call := &dsl.CallExpr{Fun: &dsl.Ident{Name: v.Op.String()}}
		for _, a := range v.Args {
			call.Args = append(call.Args, toDSL(a))
		}
		return call
	}
	return &dsl.BinaryExpr{X: toDSL(v.Args[0]), Op: infix[v.Op], Y: toDSL(v.Args[1])}
}

// infix maps a binary op back to its DSL operator: binaryOps inverted.
var infix = func() map[Op]dsl.Token {
	m := map[Op]dsl.Token{}
	for tok, op := range binaryOps {
		m[op] = tok
	}
	return m
}()
