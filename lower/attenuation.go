package lower

import (
	"fmt"
	"slices"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/noise"
)

// attenuation lowers attenuation(s) and attenuation_t(s) to placeholders
// that resolveAttenuation replaces once the whole step is lowered: the
// filter of s may be written after the call.
func (l *lowerer) attenuation(x *dsl.CallExpr) *ir.Value {
	id, ok := dsl.Unparen(x.Args[0]).(*dsl.Ident)
	if !ok || len(x.Args) != 1 {
		return l.fail(x.Pos(), "cannot lower %s without a state", x.Fun.Name)
	}
	var v *ir.Value
	if x.Fun.Name == "attenuation_t" {
		v = l.b.NewValue(ir.OpAttenT, ir.F64, true, l.b.NewValue(ir.OpStepIndex, ir.F64, true))
	} else {
		v = l.b.NewValue(ir.OpAtten, ir.F64, true)
	}
	v.Name = id.Name
	l.attens[v] = x
	return v
}

// resolveAttenuation runs the noise analysis and gives every state named by
// attenuation or attenuation_t its Filter; attenuation(s) becomes its closed
// form where there is one. A state without a linear noise model, or whose
// filter is unstable at the defaults, is an error at the call.
func (l *lowerer) resolveAttenuation(fn *ir.Func) {
	l.noise, l.solved = noise.Analyze(fn, l.describe), map[string]solved{}
	for _, v := range slices.Clone(fn.Step.Values) {
		call := l.attens[v]
		if call == nil {
			continue
		}
		fl, expr := l.filter(fn, v.Name, call)
		if fl != nil && v.Op == ir.OpAtten && expr != nil {
			l.replace(fn.Step, v, expr)
		}
	}
}

// describe quotes the source of a step value.
func (l *lowerer) describe(v *ir.Value) string {
	if s := l.src[v]; s != "" {
		return s
	}
	return "`" + ir.ExprString(v) + "`"
}

// filter returns the Filter of state s, making it on first use, and the
// closed form of attenuation(s) (nil when numeric); errors go to l.errs at
// call.
func (l *lowerer) filter(fn *ir.Func, s string, call *dsl.CallExpr) (*ir.Filter, dsl.Expr) {
	gain, err := l.gain(fn, s)
	if err != nil {
		l.errs.Addf(call.Pos(), "%s(%s): %v", call.Fun.Name, s, err)
		return nil, nil
	}
	fl := fn.Filter(s)
	if fl == nil {
		fl = l.newFilter(fn, gain)
		if err := fn.CheckFilter(fl, fn.DefaultHypers()); err != nil {
			l.errs.Addf(call.Pos(), "%s(%s) at the defaults: %v", call.Fun.Name, s, err)
		}
	}
	return fl, ClosedForm(gain)
}

// solved is the outcome of solving one state's noise model.
type solved struct {
	gain *noise.Gain
	err  error
}

// gain solves the noise model of state s, once however many calls name it.
func (l *lowerer) gain(fn *ir.Func, s string) (*noise.Gain, error) {
	if r, ok := l.solved[s]; ok {
		return r.gain, r.err
	}
	var r solved
	for _, sn := range l.noise.States {
		switch {
		case sn.State != s:
		case sn.Model == nil:
			r.err = fmt.Errorf("no linear filter with fixed coefficients carries the noise to %s: %s", s, sn.Why)
		default:
			r.gain, r.err = noise.Solve(sn.Model, l.noise.Symbols)
		}
	}
	l.solved[s] = r
	return r.gain, r.err
}

// newFilter adds the Filter of a solved model to fn.
func (l *lowerer) newFilter(fn *ir.Func, g *noise.Gain) *ir.Filter {
	m := g.Model
	fl := &ir.Filter{State: m.State, States: m.States, Target: m.Target, Model: &ir.Block{Name: "filter_" + m.State, Kind: ir.ModelBlock}, Stability: ConditionStrings(g.Conditions, g.Symbols)}
	if x := ClosedForm(g); x != nil {
		fl.Expr = dsl.ExprString(x)
	}
	names := fl.EntryNames()
	entries := slices.Concat(slices.Concat(m.M...), m.B)
	for i, e := range entries {
		v := l.lowerUniform(fl.Model, FracExpr(e, g.Symbols))
		s := fl.Model.NewValue(ir.OpStore, ir.None, true, v)
		s.Name = names[i]
	}
	fn.Filters = append(fn.Filters, fl)
	return fl
}

// lowerUniform lowers an expression of hypers and constants into b.
func (l *lowerer) lowerUniform(b *ir.Block, x dsl.Expr) *ir.Value {
	info := &dsl.Info{Uses: map[*dsl.Ident]*dsl.Object{}}
	dsl.Inspect(x, func(e dsl.Expr) bool {
		if id, ok := e.(*dsl.Ident); ok {
			info.Uses[id] = &dsl.Object{Kind: dsl.HyperObj, Name: id.Name}
		}
		return true
	})
	sub := &lowerer{info: info, b: b, env: map[string]*ir.Value{}}
	v := sub.expr(x)
	if l.err == nil {
		l.err = sub.err
	}
	return v
}

// replace lowers x into b just before old and makes every use of old use
// it instead; old is removed.
func (l *lowerer) replace(b *ir.Block, old *ir.Value, x dsl.Expr) {
	n := len(b.Values)
	nv := l.lowerUniform(b, x)
	added := slices.Clone(b.Values[n:])
	b.Values = b.Values[:n]
	i := slices.Index(b.Values, old)
	b.Values = slices.Insert(slices.Delete(b.Values, i, i+1), i, added...)
	for _, v := range b.Values {
		for j, a := range v.Args {
			if a == old {
				v.Args[j] = nv
			}
		}
	}
}
