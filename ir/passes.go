package ir

import (
	"fmt"
	"math"
	"slices"

	"github.com/fibergen/fibergen/lang"
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
		if v.Op == OpStore || v.Op == OpPrivatize || v.Op.Arity() == 0 || !allConst(v.Args) {
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
	if v.Op == OpSelect {
		return lang.SelectOf(v.Args[0].Const, v.Args[1].Const, v.Args[2].Const)
	}
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

// HoistUniforms moves every value the host computes (Value.OnHost: the
// uniform values, the line values and the stores of line states) ahead of
// all varying values and their stores, keeping relative order: the block
// becomes a host part followed by a kernel part.
func HoistUniforms(b *Block) {
	var out []*Value
	for _, v := range b.Values {
		if v.OnHost() {
			out = append(out, v)
		}
	}
	for _, v := range b.Values {
		if !v.OnHost() {
			out = append(out, v)
		}
	}
	b.Values = out
}
