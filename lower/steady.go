package lower

import (
	"fmt"
	"math"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/noise"
	"github.com/fibergen/fibergen/lang"
)

// The steady value of a time-varying filter (docs/dsl.md, "Time-varying
// filters"): where every coefficient M_t, b_t has a limit M, b as t grows
// and the filter of those limits is stable, Σ_t tends to the solution of
// the Lyapunov equation of M and b, so attenuation(s) is the steady
// attenuation of that limit filter. The limits are derived by rules that
// never guess — each one holds for every hyper setting in the declared
// ranges — over the coefficients at step t and the host block that
// computes the scalars they read: AdEMAMix's beta3_t, which reaches beta3
// when its warm-up ends, has one; a coefficient that oscillates, grows,
// or reads a scalar that sums over the steps has none, and attenuation(s)
// says why.

// steadyModel returns the limit of the time-varying model vm, a model
// with fixed coefficients over symbols of its own.
func (l *lowerer) steadyModel(fn *ir.Func, vm *noise.Model) (*noise.Model, []*ir.Value, error) {
	varying := l.modelFilter(vm, "varying_", l.noise.Symbols, fn.Scalars)
	lm := newLimiter(fn)
	var entries []*ir.Value
	for _, st := range varying.Model.Stores() {
		x := lm.limitOf(st.Args[0])
		if x.why == "" && x.kind != finiteLimit {
			x.why = "grows without bound"
		}
		if x.why != "" {
			return nil, nil, fmt.Errorf("`%s` has no limit that fibergen derives as t grows: %s", ir.ExprString(st.Args[0]), x.why)
		}
		entries = append(entries, x.x)
	}
	return noise.Fixed(vm, entries)
}

// limitKind says where a value goes as t grows.
type limitKind uint8

const (
	finiteLimit limitKind = iota
	plusInfinity
	minusInfinity
	noKnownLimit
)

// limit is what the rules know of a uniform value as t grows.
type limit struct {
	kind limitKind
	x    *ir.Value // finiteLimit: the limit, a function of the hypers in the limiter's block
	at   span      // finiteLimit: the values x takes over the hypers' ranges
	// settles says that the value equals x from some step on (a
	// warm-up's end), not only tends to it.
	settles bool
	why     string // non-empty: no limit is known, and why
}

func noLimit(format string, args ...any) limit {
	return limit{kind: noKnownLimit, why: fmt.Sprintf(format, args...)}
}

func infinity(sign int) limit {
	if sign < 0 {
		return limit{kind: minusInfinity}
	}
	return limit{kind: plusInfinity}
}

// sign is +1 or -1 for an infinite limit, and for a finite one the sign
// its span proves (0: not proved).
func (x limit) sign() int {
	switch {
	case x.kind == plusInfinity || x.kind == finiteLimit && x.at.positive():
		return 1
	case x.kind == minusInfinity || x.kind == finiteLimit && x.at.negative():
		return -1
	}
	return 0
}

// limiter derives limits, building each finite one in a block of its own.
type limiter struct {
	fn       *ir.Func
	b        *ir.Block
	memo     map[*ir.Value]limit
	assigned map[string]*ir.Value // each scalar's new value in the host block
	initial  map[string]*ir.Value // each scalar's initial value
	visiting map[string]bool
}

func newLimiter(fn *ir.Func) *limiter {
	lm := &limiter{fn: fn, b: &ir.Block{Name: "limit", Kind: ir.ModelBlock}, memo: map[*ir.Value]limit{},
		assigned: map[string]*ir.Value{}, initial: map[string]*ir.Value{}, visiting: map[string]bool{}}
	for blk, to := range map[*ir.Block]map[string]*ir.Value{fn.ScalarStep: lm.assigned, fn.ScalarInit: lm.initial} {
		if blk == nil {
			continue
		}
		for _, st := range blk.Stores() {
			to[st.Name] = st.Args[0]
		}
	}
	return lm
}

// limitOf is the limit of v as t grows.
func (lm *limiter) limitOf(v *ir.Value) limit {
	if x, ok := lm.memo[v]; ok {
		return x
	}
	x := lm.derive(v)
	lm.memo[v] = x
	return x
}

func (lm *limiter) derive(v *ir.Value) limit {
	switch v.Op {
	case ir.OpConst:
		return lm.constant(v.Const, true)
	case ir.OpHyper:
		h := lm.b.NewValue(ir.OpHyper, ir.F64, true)
		h.Name = v.Name
		return lm.finite(h, rangeSpan(lm.fn.Hypers[lm.fn.HyperIndex(v.Name)].Range), true)
	case ir.OpStepIndex:
		return infinity(1)
	case ir.OpScalar:
		return lm.scalar(v.Name)
	}
	if v.Op.Arity() == 0 || lang.Op(v.Op) > lang.LastOp {
		return noLimit("it reads %s, which is not a function of the hypers and t", v.Op)
	}
	args := make([]limit, len(v.Args))
	for i, a := range v.Args {
		if args[i] = lm.limitOf(a); args[i].why != "" {
			return args[i]
		}
	}
	if x, ok := lm.settled(v.Op, args); ok {
		return x
	}
	for _, a := range args { // the rules below take finite limits for numbers
		if a.kind == finiteLimit && !a.at.finite() {
			return noLimit("an operand's limit %s may be infinite or NaN at some setting of the hypers in their ranges", ir.ExprString(a.x))
		}
	}
	return lm.rule(v, args)
}

func (lm *limiter) finite(x *ir.Value, at span, settles bool) limit {
	return limit{kind: finiteLimit, x: x, at: at, settles: settles}
}

// constant is the limit c; one that is not a finite number is none.
func (lm *limiter) constant(c float64, settles bool) limit {
	if math.IsNaN(c) || math.IsInf(c, 0) {
		return noLimit("its limit is %v", c)
	}
	x := lm.b.NewValue(ir.OpConst, ir.F64, true)
	x.Const = c
	return lm.finite(x, point(c), settles)
}

// op builds op over the finite limits args.
// A constant operation is folded, as the passes fold it.
func (lm *limiter) op(op ir.Op, args ...limit) limit {
	xs, spans, consts, settles := make([]*ir.Value, len(args)), make([]span, len(args)), make([]float64, len(args)), true
	folds := true
	for i, a := range args {
		xs[i], spans[i], consts[i], settles = a.x, a.at, a.x.Const, settles && a.settles
		folds = folds && a.x.Op == ir.OpConst
	}
	if folds {
		return lm.constant(lang.EvalN(lang.Op(op), consts...), settles)
	}
	return lm.finite(lm.b.NewValue(op, ir.F64, true, xs...), spanOf(lang.Op(op), spans), settles)
}

// scalar is the limit of scalar name: that of its new value in the host
// block, or of its initial value where the block never assigns it.
func (lm *limiter) scalar(name string) limit {
	x := lm.assigned[name]
	if x == nil {
		if x = lm.initial[name]; x == nil {
			return noLimit("scalar %s has no value fibergen can follow", name)
		}
	}
	if lm.visiting[name] {
		return noLimit("scalar %s reads its own value at the step before (a recursion over the steps), whose limit fibergen does not derive", name)
	}
	lm.visiting[name] = true
	defer delete(lm.visiting, name)
	return lm.limitOf(x)
}

// settled applies the rule that holds for every operation: operands that
// each equal their limit from some step on give a value that equals op
// of them from some step on.
func (lm *limiter) settled(op ir.Op, args []limit) (limit, bool) {
	for _, a := range args {
		if a.kind != finiteLimit || !a.settles {
			return limit{}, false
		}
	}
	if op == ir.OpSelect && (args[0].x.Op == ir.OpConst || sameConst(args[1], args[2])) {
		return args[2-b2i(args[0].x.Const != 0 || args[0].x.Op != ir.OpConst)], true
	}
	return lm.op(op, args...), true
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rule is the limit of v from its operands' limits, one of which changes
// forever or is infinite.
func (lm *limiter) rule(v *ir.Value, args []limit) limit {
	switch v.Op {
	case ir.OpNeg:
		return lm.negate(args[0])
	case ir.OpAdd:
		return lm.sum(args[0], args[1])
	case ir.OpSub:
		return lm.sum(args[0], lm.negate(args[1]))
	case ir.OpMul:
		return lm.product(args[0], args[1])
	case ir.OpDiv:
		return lm.quotient(args[0], args[1])
	case ir.OpMin, ir.OpMax:
		return lm.extreme(v.Op, args[0], args[1])
	case ir.OpSelect:
		return lm.choose(v, args)
	case ir.OpPow:
		return lm.power(args[0], args[1])
	}
	if lang.Op(v.Op).IsComparison() {
		return lm.compare(v.Op, args[0], args[1])
	}
	return lm.unary(v, args[0])
}

func (lm *limiter) negate(x limit) limit {
	switch x.kind {
	case plusInfinity:
		return infinity(-1)
	case minusInfinity:
		return infinity(1)
	}
	return lm.op(ir.OpNeg, x)
}

func (lm *limiter) sum(x, y limit) limit {
	switch {
	case x.kind == finiteLimit && y.kind == finiteLimit:
		return lm.op(ir.OpAdd, x, y)
	case x.kind == finiteLimit:
		return y
	case y.kind == finiteLimit || x.kind == y.kind:
		return x
	}
	return noLimit("it is the difference of two values that both grow without bound")
}

func (lm *limiter) product(x, y limit) limit {
	if x.kind == finiteLimit && y.kind == finiteLimit {
		return lm.op(ir.OpMul, x, y)
	}
	if s := x.sign() * y.sign(); s != 0 {
		return infinity(s)
	}
	return noLimit("it multiplies a value that grows without bound by one whose limit fibergen cannot prove non-zero, of one sign")
}

func (lm *limiter) quotient(x, y limit) limit {
	switch {
	case x.kind == finiteLimit && y.kind == finiteLimit && y.sign() != 0:
		return lm.op(ir.OpDiv, x, y)
	case x.kind == finiteLimit && y.kind != finiteLimit:
		return lm.constant(0, false)
	case x.kind != finiteLimit && y.kind == finiteLimit && y.sign() != 0:
		return infinity(x.sign() * y.sign())
	case x.kind != finiteLimit && y.kind != finiteLimit:
		return noLimit("it divides two values that both grow without bound")
	}
	return noLimit("it divides by a value whose limit fibergen cannot prove non-zero")
}

// extreme is min or max: an operand that ends below the other (or grows
// without bound) decides it from some step on.
func (lm *limiter) extreme(op ir.Op, x, y limit) limit {
	lo, hi, ok := ordered(x, y)
	switch {
	case ok && op == ir.OpMin:
		return lo
	case ok:
		return hi
	case x.kind == finiteLimit && y.kind == finiteLimit:
		return lm.op(op, x, y)
	}
	return noLimit("fibergen cannot order its operands' limits")
}

// ordered returns x and y lowest first where their limits are ordered
// strictly for every hyper setting; from some step on the values are too.
func ordered(x, y limit) (lo, hi limit, ok bool) {
	switch {
	case x.kind == minusInfinity || y.kind == plusInfinity:
		return x, y, x.kind != y.kind
	case y.kind == minusInfinity || x.kind == plusInfinity:
		return y, x, true
	case x.at.below(y.at):
		return x, y, true
	case y.at.below(x.at):
		return y, x, true
	}
	return x, y, false
}

// compare is a comparison whose operands' limits are strictly ordered: it
// settles at 1 or 0.
func (lm *limiter) compare(op ir.Op, x, y limit) limit {
	lo, _, ok := ordered(x, y)
	if !ok {
		return noLimit("fibergen cannot tell where %s of its operands ends", op)
	}
	less := lo == x
	return lm.constant(lang.EvalN(lang.Op(op), b2f(!less), b2f(less)), true)
}

func b2f(b bool) float64 { return float64(b2i(b)) }

// choose is a select whose condition settles: at a constant, the branch it
// picks; at a function of the hypers, a select of the branches' limits.
func (lm *limiter) choose(v *ir.Value, args []limit) limit {
	c, x, y := args[0], args[1], args[2]
	switch {
	case c.kind != finiteLimit || !c.settles:
		return noLimit("its condition %s may change forever", ir.ExprString(v.Args[0]))
	case c.x.Op == ir.OpConst:
		return args[2-b2i(c.x.Const != 0)]
	case x.kind == finiteLimit && y.kind == finiteLimit:
		if sameConst(x, y) {
			x.settles = x.settles && y.settles
			return x
		}
		return lm.op(ir.OpSelect, c, x, y)
	case x.kind == y.kind:
		return x
	}
	return noLimit("its branches end apart, one without bound")
}

func sameConst(x, y limit) bool {
	return x.x.Op == ir.OpConst && y.x.Op == ir.OpConst && math.Float64bits(x.x.Const) == math.Float64bits(y.x.Const)
}

// power is x ** y where one of them changes forever.
func (lm *limiter) power(x, y limit) limit {
	switch {
	case x.kind == finiteLimit && y.kind == finiteLimit && (x.at.positive() || isInteger(y) && (y.x.Const >= 0 || x.at.negative())):
		return lm.op(ir.OpPow, x, y)
	case x.kind == finiteLimit && y.kind == plusInfinity && (x.at.positive() || x.settles && x.at.lo >= 0) && x.at.below(point(1)):
		return lm.constant(0, false)
	case x.kind == finiteLimit && y.kind == plusInfinity && x.settles && point(1).below(x.at):
		return infinity(1)
	case x.kind == plusInfinity && y.kind == finiteLimit && y.at.positive():
		return infinity(1)
	case x.kind == plusInfinity && y.kind == finiteLimit && y.at.negative():
		return lm.constant(0, false)
	}
	return noLimit("fibergen derives the limit of a power only for a positive base, a whole exponent (not below 0 where the base may be 0), or a base in [0, 1) or above 1 raised to a growing exponent")
}

func isInteger(y limit) bool {
	return y.settles && y.x.Op == ir.OpConst && y.x.Const == math.Trunc(y.x.Const)
}

// unary is a function of one operand that changes forever: continuous
// ones follow their operand where it is defined.
func (lm *limiter) unary(v *ir.Value, x limit) limit {
	switch {
	case x.kind == finiteLimit && continuousAt(v.Op, x.at):
		return lm.op(v.Op, x)
	case v.Op == ir.OpExp && x.kind == minusInfinity:
		return lm.constant(0, false)
	case (v.Op == ir.OpExp || v.Op == ir.OpLog || v.Op == ir.OpSqrt) && x.kind == plusInfinity,
		v.Op == ir.OpAbs && x.kind != finiteLimit:
		return infinity(1)
	case v.Op == ir.OpSign && x.sign() != 0:
		return lm.constant(float64(x.sign()), true)
	case (v.Op == ir.OpSin || v.Op == ir.OpCos) && x.kind != finiteLimit:
		return noLimit("%s of a value that grows without bound oscillates", v.Op)
	}
	return noLimit("fibergen derives no limit of %s there", v.Op)
}

// continuousAt reports whether op is continuous over the span at.
func continuousAt(op ir.Op, at span) bool {
	switch op {
	case ir.OpExp, ir.OpAbs, ir.OpSin, ir.OpCos:
		return true
	case ir.OpLog:
		return at.positive()
	case ir.OpSqrt: // at 0, values below it would give NaN
		return at.positive()
	}
	return false
}
