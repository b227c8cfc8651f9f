package lower

import (
	"cmp"
	"errors"
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
	l.noise, l.solved = noise.Analyze(fn, l.describe, l.terms), map[string]solved{}
	var hostReads []*ir.Value // attenuation_t of time-varying filters in the host block
	for _, b := range []*ir.Block{fn.ScalarStep, fn.Step} {
		if b == nil {
			continue
		}
		for _, v := range slices.Clone(b.Values) {
			call := l.attens[v]
			if call == nil {
				continue
			}
			if sn := l.stateNoise(v.Name); v.Op == ir.OpAttenT && sn != nil && sn.Varying != nil {
				if l.followVarying(fn, v, sn, call) && b == fn.ScalarStep {
					hostReads = append(hostReads, v)
				}
				continue
			}
			fl, expr := l.filter(fn, v.Name, call)
			if fl != nil && v.Op == ir.OpAtten && expr != nil {
				l.replace(b, v, expr)
			}
		}
	}
	l.advanceHostReads(fn, hostReads)
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
	if start := l.start(s); call.Fun.Name == "attenuation_t" && start != "" {
		l.errs.Addf(call.Pos(), "attenuation_t(%s): the filter starts otherwise at step 0, at %s; the finite-time gain is derived "+
			"for filters that start from their buffers, and attenuation(%s), the steady value, is unaffected", s, start, s)
		return nil, nil
	}
	closed := ClosedForm(gain)
	if k := len(gain.Model.States); call.Fun.Name == "attenuation" && closed == nil && k > MaxNumericFilterStates {
		l.errs.Addf(call.Pos(), "%s(%s): its filter has %d states and no closed form; the host solves it exactly, at a cost that grows as the "+
			"sixth power of the states (20 states take a second, 30 ten), so at most %d", call.Fun.Name, s, k, MaxNumericFilterStates)
		return nil, nil
	}
	fl := fn.Filter(s)
	if fl == nil {
		fl = l.newFilter(fn, gain)
		if err := fn.CheckFilter(fl, fn.DefaultHypers()); err != nil {
			msg := err.Error()
			if fl.Limit {
				msg = "its coefficients change from step to step, and the filter of their limits as t grows has no steady value: " + msg + follows(*l.stateNoise(s))
			}
			l.errs.Addf(call.Pos(), "%s(%s) at the defaults: %s", call.Fun.Name, s, msg)
		}
	}
	return fl, closed
}

// start is the noise analysis's StateNoise.Start of state s.
func (l *lowerer) start(s string) string {
	if sn := l.stateNoise(s); sn != nil {
		return sn.Start
	}
	return ""
}

// stateNoise is the noise analysis's StateNoise of state s, nil for none.
func (l *lowerer) stateNoise(s string) *noise.StateNoise {
	for i := range l.noise.States {
		if l.noise.States[i].State == s {
			return &l.noise.States[i]
		}
	}
	return nil
}

// MaxNumericFilterStates bounds the filter of attenuation(s) without a
// closed form, which the host solves exactly (gain.SteadyGain) at every
// hyper setting: 16 states take 0.3 s.
const MaxNumericFilterStates = 16

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
		case sn.Varying != nil:
			r.gain, r.err = SteadyGain(fn, l.noise, sn)
		case sn.Model == nil:
			r.err = fmt.Errorf("no linear filter with fixed coefficients carries the noise to %s: %s%s", s, sn.Why, noise.VaryingNote(sn))
		default:
			r.gain, r.err = noise.Solve(sn.Model, l.noise.Symbols)
		}
	}
	l.solved[s] = r
	return r.gain, r.err
}

// SteadyGain solves the limit as t grows of the time-varying model of
// sn, a state of the noise analysis an of fn (steady.go), or says why it
// has none.
func SteadyGain(fn *ir.Func, an *noise.Analysis, sn noise.StateNoise) (*noise.Gain, error) {
	l := &lowerer{noise: an}
	m, symbols, err := l.steadyModel(fn, sn.Varying)
	if err == nil {
		err = l.err
	}
	if err != nil {
		return nil, fmt.Errorf("%s, and %v%s", sn.Why, err, follows(sn))
	}
	g, err := noise.Solve(m, symbols)
	if errors.Is(err, noise.ErrNoSteadyState) {
		err = errors.New("it has an eigenvalue on the unit circle for every value of the hypers (the Lyapunov equation has no solution)")
	}
	if err != nil {
		return nil, fmt.Errorf("%s; the filter of its coefficients' limits as t grows has no steady value: %v%s", sn.Why, err, follows(sn))
	}
	return g, nil
}

// follows points from a time-varying filter's steady value to
// attenuation_t, where the host follows it.
func follows(sn noise.StateNoise) string {
	if noise.VaryingNote(sn) == "" {
		return ""
	}
	return fmt.Sprintf("; attenuation_t(%s) follows its variance exactly", sn.State)
}

// newFilter adds the Filter of a solved model to fn.
func (l *lowerer) newFilter(fn *ir.Func, g *noise.Gain) *ir.Filter {
	fl := l.addFilter(fn, g.Model, g.Symbols)
	fl.Start = l.start(g.Model.State)
	sn := l.stateNoise(g.Model.State)
	fl.Limit = sn != nil && sn.Varying != nil
	fl.Stability = ConditionStrings(g.Conditions, g.Symbols)
	if x := ClosedForm(g); x != nil {
		fl.Expr = dsl.ExprString(x)
	}
	return fl
}

// addFilter adds to fn the Filter of model m, whose fractions are in
// symbols.
func (l *lowerer) addFilter(fn *ir.Func, m *noise.Model, symbols []*ir.Value) *ir.Filter {
	fl := l.modelFilter(m, "filter_", symbols, nil)
	fn.Filters = append(fn.Filters, fl)
	return fl
}

// modelFilter is the Filter of model m, its block named prefix+state,
// whose fractions are in symbols and may read the scalars named (OpScalar
// at the step).
func (l *lowerer) modelFilter(m *noise.Model, prefix string, symbols []*ir.Value, scalarNames []string) *ir.Filter {
	fl := &ir.Filter{State: m.State, States: m.States, Target: m.Target, Model: &ir.Block{Name: prefix + m.State, Kind: ir.ModelBlock}}
	scalars := map[string]*ir.Value{}
	for _, name := range scalarNames {
		scalars[name] = fl.Model.NewValue(ir.OpScalar, ir.F64, true)
		scalars[name].Name = name
	}
	names := fl.EntryNames()
	for i, e := range slices.Concat(slices.Concat(m.M...), m.B) {
		v := l.lowerUniform(fl.Model, FracExpr(e, symbols), scalars)
		fl.Model.NewValue(ir.OpStore, ir.None, true, v).Name = names[i]
	}
	return fl
}

// boundFilters gives every other state that the noise reaches linearly a
// Bounded filter, checked at the defaults: a state such as c = rho*c + g
// grows without bound at rho > 1, whether or not attenuation names it;
// so does c = rho*c + mean(g), whose noise comes through a reduction
// (noise.StateNoise.Growth). A
// state whose model has the states of a filter already made (FiBeR's r
// shares gt's) has its M, and so its radius, and needs none. The
// stability region comes from solving the model where that is cheap.
func (l *lowerer) boundFilters(fn *ir.Func, f *dsl.File) {
	var recursions map[string]*noise.Model
	var recSymbols []*ir.Value
	own := func(state string) (*noise.Model, []*ir.Value) { // the state's own recursion, if it has one
		if recursions == nil {
			recursions, recSymbols = noise.Recursions(fn, l.terms)
		}
		return recursions[state], recSymbols
	}
	for _, sn := range l.noise.States {
		// A recursion that a reduction adds noise to grows as a model
		// would; a state the noise reaches otherwise, or not at all, has
		// its own recursion, if it has one.
		m, symbols := cmp.Or(sn.Model, sn.Growth), l.noise.Symbols
		if m == nil {
			m, symbols = own(sn.State)
		}
		l.boundFilter(fn, f, sn.State, m, symbols, sn.Model != nil)
	}
	for _, s := range fn.LineStateNames() { // a state per row or column grows as its own recursion does
		m, symbols := own(s)
		l.boundFilter(fn, f, s, m, symbols, false)
	}
}

// boundFilter gives state, whose recursion is m (nil: none), a Bounded
// filter where no filter has its states, with its stability region where
// the noise reaches it linearly (solved) and m is small, and reports a
// default at which it is unstable.
func (l *lowerer) boundFilter(fn *ir.Func, f *dsl.File, state string, m *noise.Model, symbols []*ir.Value, solved bool) {
	if m == nil || slices.Contains(fn.NoiseBuffers(), state) ||
		slices.ContainsFunc(fn.Filters, func(fl *ir.Filter) bool { return slices.Equal(fl.States, m.States) }) {
		return
	}
	fl := l.addFilter(fn, m, symbols)
	fl.Bounded = true
	if len(m.States) <= maxRegionStates && solved {
		if g, err := l.gain(fn, state); err == nil {
			fl.Stability = ConditionStrings(g.Conditions, g.Symbols)
			if x := ClosedForm(g); x != nil {
				fl.Expr = dsl.ExprString(x)
			}
		}
	}
	// An unstable attenuation filter reported already says it.
	if err := fn.CheckFilter(fl, fn.DefaultHypers()); err != nil && len(l.errs) == 0 {
		l.errs.Addf(stateDecl(f, state), "state %s at the defaults: %v; the defaults must be stable (--allow-unstable "+
			"admits unstable settings given with --set, not defaults)", state, err)
	}
}

// maxRegionStates bounds the models boundFilters solves for their
// stability region.
const maxRegionStates = 4

// stateDecl is the position of state s's declaration (theta: the step).
func stateDecl(f *dsl.File, s string) dsl.Pos {
	for _, d := range f.States {
		if d.Name.Name == s {
			return d.Name.NamePos
		}
	}
	return f.Step.Keyword
}

// lowerUniform lowers an expression of hypers, constants and t into b,
// reading the scalars in scalars at the values given there (a time-varying
// filter's coefficients after the host block; nil elsewhere).
func (l *lowerer) lowerUniform(b *ir.Block, x dsl.Expr, scalars map[string]*ir.Value) *ir.Value {
	info := &dsl.Info{Uses: map[*dsl.Ident]*dsl.Object{}}
	env := map[string]*ir.Value{}
	dsl.Inspect(x, func(e dsl.Expr) bool {
		id, ok := e.(*dsl.Ident)
		switch {
		case !ok:
		case scalars[id.Name] != nil:
			env[id.Name] = scalars[id.Name]
		case id.Name == "t":
			info.Uses[id] = &dsl.Object{Kind: dsl.BuiltinObj, Name: "t"}
		default:
			info.Uses[id] = &dsl.Object{Kind: dsl.HyperObj, Name: id.Name}
		}
		return true
	})
	sub := &lowerer{info: info, b: b, env: env}
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
	nv := l.lowerUniform(b, x, nil)
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
