package ir

import (
	"fmt"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/lang"
)

// LookaheadState is the state that a two_point optimizer's step writes for
// the trainer: the next look-ahead point θ_{t+1} + γ·(θ_{t+1} − θ_t), where
// γ is the observation's lookahead argument. The trainer evaluates the
// per-example gradients of the next step there. Before the first step the
// look-ahead point is θ_0 itself (d_{-1} = 0), so the state starts at 0 and
// is not read until a step has written it.
const LookaheadState = lang.LookaheadState

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

// lowerLookahead appends LookaheadState to fn's states: initialized to 0,
// and stored at the end of the step (whose values l.env still holds) as
// θ_new + γ·(θ_new − θ_old) in float32, with γ a host scalar of the hypers
// and t.
func (l *lowerer) lowerLookahead(fn *Func, gamma dsl.Expr) {
	fn.States = append(fn.States, LookaheadState)
	l.b = fn.Init
	l.store(LookaheadState, l.toF32(l.constant(0)))
	l.b = fn.Step
	old := l.b.NewValue(OpLoad, F32, false)
	old.Name = "theta"
	updated := l.env["theta"]
	if updated == nil {
		updated = old
	}
	step := l.op(OpMul, l.toF32(l.expr(gamma)), l.op(OpSub, updated, old))
	st := l.store(LookaheadState, l.op(OpAdd, updated, step))
	l.src[st] = fmt.Sprintf("the look-ahead point `%s = theta + (%s) * (theta - theta_prev)` that two_point adds", LookaheadState, dsl.ExprString(gamma))
}
