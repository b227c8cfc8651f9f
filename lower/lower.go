package lower

import (
	"fmt"
	"math"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/noise"
	"github.com/fibergen/fibergen/lang"
)

// Lower translates a checked file into a Func, and returns the noise
// analysis of its step as lowered, whose messages quote the source. The
// file must have passed dsl.Check without errors; Lower reports an error
// instead of panicking if it meets something Check should have rejected.
// Errors of the source that only lowering finds (an attenuation without a
// linear, stable filter) come as a dsl.ErrorList.
func Lower(f *dsl.File, info *dsl.Info) (*ir.Func, *noise.Analysis, error) {
	l := &lowerer{info: info, src: map[*ir.Value]string{}, attens: map[*ir.Value]*dsl.CallExpr{}, covariances: map[string]string{}}
	fn := &ir.Func{Name: f.Name()}
	l.lowerHypers(fn, f.Hypers)
	lowerStates(fn, f)
	l.lines = fn.LineState
	if f.Noise != nil {
		fn.Noise = &ir.Filter{State: dsl.NoiseOut, States: f.NoiseBufferNames(), Noise: true}
		fn.States = append(fn.States, fn.Noise.States...)
	}
	fn.Init = l.lowerInit(f.States, fn.NoiseBuffers())
	if len(f.Scalars) > 0 && f.Step != nil {
		for _, s := range f.Scalars {
			fn.Scalars = append(fn.Scalars, s.Name.Name)
		}
		fn.ScalarInit, fn.ScalarStep = l.lowerScalars(f.Scalars, f.Step.Host)
	}
	fn.ObsArgs, fn.Observe = l.lowerObserve(f.Observe)
	if f.Step == nil {
		return nil, nil, fmt.Errorf("lower: %s has no step block", fn.Name)
	}
	fn.Step = l.lowerStep(f.Step, f.Noise)
	if la := lookaheadArg(f.Observe); la != nil {
		l.lowerLookahead(fn, la)
	}
	if l.err == nil {
		l.resolveAttenuation(fn)
		l.addNoiseFilter(fn, f.Noise)
		l.boundFilters(fn, f)
		l.varyingFilters(fn)
		fn.Diags = l.lowerDiagnostics(f, fn)
		fn.Reduce = l.lowerReduce(fn)
	}
	switch {
	case l.err != nil:
		return nil, nil, l.err
	case len(l.errs) > 0:
		l.errs.Normalize()
		return nil, nil, l.errs
	}
	return fn, l.noise, ir.Verify(fn)
}

// lowerStorage records the storage of a state declared narrower than
// float32 (fn.Storage).
func lowerStorage(fn *ir.Func, s *dsl.StateDecl) {
	if s.Type == nil || lang.DType(s.Type.Name) == lang.Float32 {
		return
	}
	if fn.Storage == nil {
		fn.Storage = map[string]ir.Storage{}
	}
	fn.Storage[s.Name.Name] = ir.Storage{DType: lang.DType(s.Type.Name), Stochastic: s.Rounding != nil}
}

type lowerer struct {
	info   *dsl.Info
	noise  *noise.Analysis // of the step, once lowered
	b      *ir.Block
	env    map[string]*ir.Value // values assigned so far in the step
	err    error
	errs   dsl.ErrorList               // the source's errors found when lowering
	src    map[*ir.Value]string        // the source of each step value, quoted, for messages
	attens map[*ir.Value]*dsl.CallExpr // attenuation and attenuation_t calls, to resolve
	solved map[string]solved           // the solved noise model of each state they name
	starts []*dsl.StateDecl            // the states whose initial value reads theta or g (startFrom)
	// scalarsAfter holds each scalar's value at the end of the host block
	// (lowerScalars), which a time-varying filter's coefficients read.
	scalarsAfter map[string]*ir.Value
	// covariances names, by its sorted states, the state whose
	// time-varying filter's covariance scalars hold each filter's Σ_t
	// (covarianceOf).
	covariances map[string]string
	terms       []*ir.Value                     // the step's reductions' terms, by OpReduce r<i> (reduction)
	lines       func(name string) *ir.LineState // the line state of a name, or nil (ir.Func.LineState)
}

func (l *lowerer) fail(pos dsl.Pos, format string, args ...any) *ir.Value {
	if l.err == nil {
		l.err = fmt.Errorf("%s: lower: %s", pos, fmt.Sprintf(format, args...))
	}
	return l.b.NewValue(ir.OpConst, ir.F64, true)
}

// lowerHypers lowers the hypers, and the defaults written as expressions
// of earlier hypers into fn.HyperDefaults; a derived hyper's Default is its
// value at the other defaults (which the checker has checked).
func (l *lowerer) lowerHypers(fn *ir.Func, hypers []*dsl.HyperDecl) {
	l.b, l.env = &ir.Block{Name: "hyper defaults", Kind: ir.HyperDefaultBlock}, map[string]*ir.Value{}
	for _, h := range hypers {
		hy := ir.Hyper{Name: h.Name.Name, Range: hyperRange(h.Range), Derived: h.Default == nil, Alias: hyperAlias(h.Alias)}
		if h.Default != nil {
			hy.Default = h.Default.Value
		} else {
			l.store(h.Name.Name, l.expr(h.DefaultExpr))
		}
		fn.Hypers = append(fn.Hypers, hy)
	}
	if len(l.b.Values) == 0 {
		return
	}
	fn.HyperDefaults = l.b
	d := fn.Derive(fn.DefaultHypers(), nil)
	for i, h := range fn.Hypers {
		if h.Derived {
			fn.Hypers[i].Default = d[i]
		}
	}
}

// lowerInit lowers the states' initial values; one that reads theta or g
// is 0 in the buffer, and the step starts the state from it (startFrom).
// The noise buffers start at 0: no noise was drawn before step 0.
func (l *lowerer) lowerInit(states []*dsl.StateDecl, buffers []string) *ir.Block {
	l.b, l.env = &ir.Block{Name: "init", Kind: ir.InitBlock}, map[string]*ir.Value{}
	for _, s := range states {
		if l.readsCoordinates(s.Init) {
			l.starts = append(l.starts, s)
			l.store(s.Name.Name, l.toF32(l.constant(0)))
			continue
		}
		st := l.store(s.Name.Name, l.toF32(l.expr(s.Init)))
		if s.Axis != nil { // each of its lines starts from the value
			st.Axis = lang.AxisWords[s.Axis.Name]
		}
	}
	for _, b := range buffers {
		l.store(b, l.toF32(l.constant(0)))
	}
	return l.b
}

// readsCoordinates reports whether x reads theta or g.
func (l *lowerer) readsCoordinates(x dsl.Expr) bool {
	found := false
	dsl.Inspect(x, func(e dsl.Expr) bool {
		if id, ok := e.(*dsl.Ident); ok {
			obj := l.info.Uses[id]
			found = found || obj != nil && dsl.IsCoordinate(obj)
		}
		return !found
	})
	return found
}

// startFrom makes the step read state d as select(t == 0, INIT, d): its
// initial value, of theta and g before the step, at step 0, and its
// buffer after — the select the noise analysis sees through.
func (l *lowerer) startFrom(d *dsl.StateDecl) {
	x0 := l.toF32(l.expr(d.Init))
	first := l.op(ir.OpEq, l.b.NewValue(ir.OpStepIndex, ir.F64, true), l.constant(0))
	prev := l.b.NewValue(ir.OpLoad, ir.F32, false)
	prev.Name = d.Name.Name
	v := l.op(ir.OpSelect, first, x0, prev)
	v.Name = d.Name.Name // ir.StartOf
	l.src[v] = fmt.Sprintf("`state %s = %s` (line %d)", d.Name.Name, dsl.ExprString(d.Init), d.Name.NamePos.Line)
	l.env[d.Name.Name] = v
}

// lowerScalars lowers the scalars' initial values and the host block,
// which stores each scalar's new value and keeps its locals to itself.
func (l *lowerer) lowerScalars(scalars []*dsl.ScalarDecl, host []*dsl.AssignStmt) (init, step *ir.Block) {
	l.b, l.env = &ir.Block{Name: "scalar init", Kind: ir.ScalarInitBlock}, map[string]*ir.Value{}
	for _, s := range scalars {
		l.store(s.Name.Name, l.expr(s.Init))
	}
	init = l.b
	l.b, l.env = &ir.Block{Name: "scalar step", Kind: ir.ScalarStepBlock}, map[string]*ir.Value{}
	for _, a := range host {
		v := l.expr(a.RHS)
		if obj := l.info.Defs[a]; obj != nil && obj.Kind == dsl.ScalarObj {
			l.store(a.LHS.Name, v)
		}
		l.env[a.LHS.Name] = v
	}
	l.scalarsAfter = map[string]*ir.Value{}
	for _, sc := range scalars {
		l.scalarsAfter[sc.Name.Name] = l.env[sc.Name.Name]
	}
	return init, l.b
}

func (l *lowerer) lowerObserve(d *dsl.ObserveDecl) (*ir.Block, *ir.Observation) {
	l.b, l.env = &ir.Block{Name: "observe", Kind: ir.ObserveBlock}, map[string]*ir.Value{}
	if d == nil {
		return l.b, nil
	}
	obs := &ir.Observation{Kind: d.Kind.Name}
	for _, a := range d.Args {
		obs.Args = append(obs.Args, a.Name.Name)
		l.store(a.Name.Name, l.expr(a.Value))
	}
	return l.b, obs
}

func (l *lowerer) lowerStep(d *dsl.StepDecl, nd *dsl.NoiseDecl) *ir.Block {
	l.b, l.env = &ir.Block{Name: "step", Kind: ir.StepBlock}, map[string]*ir.Value{}
	l.lowerNoise(nd)
	for _, s := range l.starts {
		l.startFrom(s)
	}
	for _, a := range d.Body {
		v := l.expr(a.RHS)
		obj := l.info.Defs[a]
		if s := l.lines(a.LHS.Name); s != nil && obj != nil && obj.Kind == dsl.StateObj {
			st := l.storeLine(a, s, v)
			l.src[st] = fmt.Sprintf("`%s = %s` (line %d)", a.LHS.Name, dsl.ExprString(a.RHS), a.LHS.NamePos.Line)
		} else if obj != nil && obj.Kind != dsl.LocalObj {
			v = l.toF32(v)
			st := l.store(a.LHS.Name, v)
			l.src[st] = fmt.Sprintf("`%s = %s` (line %d)", a.LHS.Name, dsl.ExprString(a.RHS), a.LHS.NamePos.Line)
		}
		l.env[a.LHS.Name] = v
	}
	return l.b
}

func (l *lowerer) store(name string, v *ir.Value) *ir.Value {
	s := l.b.NewValue(ir.OpStore, ir.None, v.Uniform, v)
	s.Name = name
	return s
}

// toF32 converts a uniform value, or a line value, for use by the kernel.
func (l *lowerer) toF32(v *ir.Value) *ir.Value {
	if v.Type == ir.F32 {
		return v
	}
	return l.b.NewValue(ir.OpF32, ir.F32, v.Uniform, v)
}

func (l *lowerer) expr(x dsl.Expr) *ir.Value {
	v := l.exprValue(x)
	if l.src != nil && l.src[v] == "" {
		l.src[v] = "`" + dsl.ExprString(x) + "`"
	}
	return v
}

func (l *lowerer) exprValue(x dsl.Expr) *ir.Value {
	switch x := x.(type) {
	case *dsl.NumberLit:
		return l.constant(x.Value)
	case *dsl.ParenExpr:
		return l.expr(x.X)
	case *dsl.Ident:
		return l.ident(x)
	case *dsl.UnaryExpr:
		return l.op(ir.OpNeg, l.expr(x.X))
	case *dsl.BinaryExpr:
		return l.binary(x)
	case *dsl.CallExpr:
		return l.call(x)
	}
	return l.fail(x.Pos(), "unexpected expression %T", x)
}

func (l *lowerer) constant(c float64) *ir.Value {
	v := l.b.NewValue(ir.OpConst, ir.F64, true)
	v.Const = c
	return v
}

func (l *lowerer) ident(id *dsl.Ident) *ir.Value {
	if v := l.env[id.Name]; v != nil {
		return v
	}
	obj := l.info.Uses[id]
	if obj == nil {
		return l.fail(id.NamePos, "unresolved name %s", id.Name)
	}
	var v *ir.Value
	switch {
	case obj.Kind == dsl.HyperObj:
		v = l.b.NewValue(ir.OpHyper, ir.F64, true)
	case dsl.IsNoiseDraw(obj):
		return l.b.NewValue(ir.OpDraw, ir.F32, false)
	case obj.Kind == dsl.StateObj && l.lines(id.Name) != nil:
		v = l.b.NewValue(ir.OpLoad, ir.F64, false)
		v.Axis = l.lines(id.Name).Axis
	case obj.Kind == dsl.StateObj, obj.Kind == dsl.BufferObj, obj.Name == "g", obj.Name == "theta":
		v = l.b.NewValue(ir.OpLoad, ir.F32, false)
	case obj.Kind == dsl.ScalarObj:
		v = l.b.NewValue(ir.OpScalar, ir.F64, true)
	case obj.Name == "t":
		return l.b.NewValue(ir.OpStepIndex, ir.F64, true)
	case obj.Name == "sigma_w2":
		return l.b.NewValue(ir.OpSigmaW2, ir.F64, true)
	default:
		return l.fail(id.NamePos, "cannot lower %s", id.Name)
	}
	v.Name = id.Name
	return v
}

func (l *lowerer) binary(x *dsl.BinaryExpr) *ir.Value {
	a, b := l.expr(x.X), l.expr(x.Y)
	if x.Op == dsl.POW && a.Type == ir.F32 {
		n, ok := l.info.Consts[x.Y]
		if !ok || n != math.Trunc(n) || math.Abs(n) > lang.MaxPowExponent {
			return l.fail(x.OpPos, "per-coordinate ** needs a constant integer exponent")
		}
		return l.powInt(a, int(n))
	}
	return l.op(ir.OpOf(x.Op.Op()), a, b)
}

// powInt expands x ** n into multiplications, x*x*...*x from the left, and
// 1 / that for negative n, so that every target rounds the same way.
func (l *lowerer) powInt(x *ir.Value, n int) *ir.Value {
	k := n
	if k < 0 {
		k = -k
	}
	p := l.toF32(l.constant(1))
	if k > 0 {
		p = x
	}
	for i := 1; i < k; i++ {
		p = l.op(ir.OpMul, p, x)
	}
	if n < 0 {
		p = l.op(ir.OpDiv, l.toF32(l.constant(1)), p)
	}
	return p
}

func (l *lowerer) call(x *dsl.CallExpr) *ir.Value {
	if dsl.IsAttenuation(x.Fun.Name) {
		return l.attenuation(x)
	}
	if dsl.IsReductionCall(x) {
		return l.reduction(x)
	}
	if axis, ok := lang.LineReductions[x.Fun.Name]; ok {
		return l.lineReduction(x, axis)
	}
	l0, ok := lang.Calls[x.Fun.Name]
	op := ir.OpOf(l0)
	if !ok || len(x.Args) != op.Arity() {
		return l.fail(x.Pos(), "cannot lower call of %s", x.Fun.Name)
	}
	args := make([]*ir.Value, len(x.Args))
	for i, a := range x.Args {
		args[i] = l.expr(a)
	}
	return l.op(op, args...)
}

// op emits an arithmetic value: f64 if every operand is f64 and the line
// values among them are along one axis (then it is uniform, or a line
// value along it), otherwise f32 with f64 operands converted (a row value
// with a column value is per coordinate); it is uniform when all its
// operands are (a state assigned a uniform value and read later).
func (l *lowerer) op(op ir.Op, args ...*ir.Value) *ir.Value {
	uniform, f64, axis := true, true, lang.Coords
	for _, a := range args {
		uniform = uniform && a.Uniform
		f64 = f64 && a.Type == ir.F64
		switch {
		case !a.IsLine():
		case axis == lang.Coords:
			axis = a.Axis
		case axis != a.Axis:
			f64 = false
		}
	}
	if f64 {
		v := l.b.NewValue(op, ir.F64, uniform, args...)
		v.Axis = axis
		return v
	}
	for i, a := range args {
		args[i] = l.toF32(a)
	}
	return l.b.NewValue(op, ir.F32, uniform, args...)
}

// hyperAlias is a hyper's alias in the IR, nil without one.
func hyperAlias(a *dsl.Alias) *ir.Alias {
	if a == nil {
		return nil
	}
	out := &ir.Alias{Name: a.Name.Name}
	if a.Index >= 0 {
		i := a.Index
		out.Index = &i
	}
	return out
}

// hyperRange is the interval of a hyper's range, nil when unconstrained.
func hyperRange(r *dsl.Range) *lang.Interval {
	if r == nil {
		return nil
	}
	return &r.Interval
}
