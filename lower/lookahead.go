package lower

import (
	"fmt"
	"slices"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
)

// lookaheadArg returns the lookahead argument of a two_point observation,
// or nil for an optimizer without one.
func lookaheadArg(d *dsl.ObserveDecl) dsl.Expr {
	if d == nil || d.Kind.Name != "two_point" {
		return nil
	}
	for _, a := range d.Args {
		if a.Name.Name == "lookahead" {
			return a.Value
		}
	}
	return nil
}

// lowerLookahead appends lang.LookaheadState to fn's states: initialized to 0,
// and stored at the end of the step (whose values l.env still holds) as
// θ_new + γ·(θ_new − θ_old) in float32, with γ a host scalar of the hypers
// and t.
func (l *lowerer) lowerLookahead(fn *ir.Func, gamma dsl.Expr) {
	fn.States = slices.Insert(fn.States, len(fn.States)-len(fn.NoiseBuffers()), lang.LookaheadState) // the buffers stay last
	l.b = fn.Init
	l.store(lang.LookaheadState, l.toF32(l.constant(0)))
	l.b = fn.Step
	old := l.b.NewValue(ir.OpLoad, ir.F32, false)
	old.Name = "theta"
	updated := l.env["theta"]
	if updated == nil {
		updated = old
	}
	step := l.op(ir.OpMul, l.toF32(l.expr(gamma)), l.op(ir.OpSub, updated, old))
	st := l.store(lang.LookaheadState, l.op(ir.OpAdd, updated, step))
	l.src[st] = fmt.Sprintf("the look-ahead point `%s = theta + (%s) * (theta - theta_prev)` that two_point adds", lang.LookaheadState, dsl.ExprString(gamma))
}
