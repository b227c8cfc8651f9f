package dsl

import (
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/fibergen/fibergen/lang"
)

// scope says where an expression appears, which decides what it may read.
type scope struct {
	where     string    // "the initial value of state m", for messages
	initOnly  bool      // literals and hypers only
	coords    bool      // with initOnly: a state's initial value, which may also read theta and g
	axis      lang.Axis // with initOnly: the axis of the state whose initial value this is
	observe   bool      // the observation's weights
	host      bool      // the step's host block
	noise     bool      // the noise block
	bound     map[string]bool
	later     map[string]*AssignStmt // step locals not bound yet
	usedEarly map[string]bool        // locals read before being bound
}

// value is what checking an expression yields.
type value struct {
	varying bool
	axis    lang.Axis // with varying: per coordinate, per row or per column
	isConst bool
	c       float64
}

// with is the varying part of an operation of v and w: per-step uniform
// if both are, else the axis the two join to (lang.Axis.Join).
func (v value) with(w value) value {
	switch {
	case !w.varying:
	case !v.varying:
		v.varying, v.axis = true, w.axis
	default:
		v.axis = v.axis.Join(w.axis)
	}
	return v
}

// expr checks x in scope s and records its constant value, if any.
func (c *checker) expr(x Expr, s *scope) value {
	v := c.exprValue(x, s)
	if v.isConst {
		c.info.Consts[x] = v.c
	}
	return v
}

func (c *checker) exprValue(x Expr, s *scope) value {
	switch x := x.(type) {
	case *NumberLit:
		return value{isConst: true, c: x.Value}
	case *Ident:
		return c.ident(x, s)
	case *ParenExpr:
		return c.expr(x.X, s)
	case *UnaryExpr:
		v := c.expr(x.X, s)
		v.c = -v.c
		return v
	case *BinaryExpr:
		return c.binary(x, s)
	case *CallExpr:
		return c.call(x, s)
	}
	return value{} // BadExpr: already reported by the parser
}

func (c *checker) ident(id *Ident, s *scope) value {
	obj := c.lookup(id, s)
	if obj == nil {
		return value{}
	}
	c.info.Uses[id] = obj
	if obj.Kind == LocalObj {
		obj.uses++
	}
	if obj.Kind == FuncObj {
		c.errorf(id.NamePos, "%s is a function; call it as %s(...)", id.Name, id.Name)
		return value{}
	}
	c.checkReadable(id, obj, s)
	return value{varying: obj.Varying, axis: obj.Axis}
}

// lookup resolves a name read in scope s, reporting undefined names and
// locals read before they are bound.
func (c *checker) lookup(id *Ident, s *scope) *Object {
	if id.Name == "_" {
		// The parser gives a missing name the Name "", so this _ was
		// written: it names nothing.
		c.errorf(id.NamePos, "cannot use _ as a value")
		return nil
	}
	if obj := noiseName(id.Name, s); obj != nil {
		return obj
	}
	if obj := universe[id.Name]; obj != nil {
		return obj
	}
	if obj := c.names[id.Name]; obj != nil && (obj.Kind != LocalObj || s.bound[id.Name] || obj.Host && !s.host || obj.Noise && !s.noise) {
		return obj
	}
	if a := s.later[id.Name]; a != nil {
		s.usedEarly[id.Name] = true
		c.errorf(id.NamePos, "%s is used before it is bound (bound at %s)", id.Name, a.LHS.NamePos.LineCol())
		return nil
	}
	c.undefined(id)
	return nil
}

// undefined reports the name id as undefined, with the declared or
// built-in values (not functions: id is not called) it may be a
// misspelling of.
func (c *checker) undefined(id *Ident) {
	if near := c.nearNames(id.Name); len(near) > 0 {
		c.errorf(id.NamePos, "undefined: %s (did you mean %s?)", id.Name, strings.Join(near, " or "))
		return
	}
	c.errorf(id.NamePos, "undefined: %s", id.Name)
}

// suggestBudget bounds the work nearNames does for one file (names looked
// at and edit-distance table cells), so that a file of many misspelt
// names still checks in milliseconds; past it, undefined names get no
// suggestion.
const suggestBudget = 1 << 22

// nearNames returns the declared names and built-in values within an edit
// distance of at most 2 of name (1 for a name of five letters or fewer,
// none for one letter, which every other letter is one edit from), the
// nearest ones only, sorted; at most three.
func (c *checker) nearNames(name string) []string {
	limit := 2
	switch {
	case len(name) <= 1 || c.suggested > suggestBudget:
		return nil
	case len(name) <= 5:
		limit = 1
	}
	best, out := limit+1, []string(nil)
	consider := func(n string) {
		c.suggested++
		if n == name || abs(len(n)-len(name)) > limit || c.suggested > suggestBudget { // the same name: a local of another block
			return
		}
		c.suggested += len(name) * len(n)
		switch d := editDistance(name, n); {
		case d > limit:
		case d < best:
			best, out = d, []string{n}
		case d == best:
			out = append(out, n)
		}
	}
	for n := range c.names {
		consider(n)
	}
	for n, obj := range universe {
		if obj.Kind != FuncObj {
			consider(n)
		}
	}
	if c.suggested > suggestBudget { // cut short: which names it saw depends on the maps' order
		return nil
	}
	slices.Sort(out)
	return out[:min(len(out), 3)]
}

// abs is |x|.
func abs(x int) int { return max(x, -x) }

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev = cur
	}
	return prev[len(b)]
}

// checkReadable enforces what each place may read; reading g outside step is
// the privacy rule.
func (c *checker) checkReadable(id *Ident, obj *Object, s *scope) {
	switch {
	case s.noise:
		c.checkNoiseReadable(id, obj)
	case obj.Noise:
		c.errorf(id.NamePos, "privacy: %s cannot read %s, a %s of the noise block: the noise must stay secret, and reaches the step only inside g", s.where, id.Name, kindName(obj.Kind))
	case s.coords && IsCoordinate(obj):
		// A state's initial value at step 0: theta before the step, and
		// the privatized g of step 0.
	case s.axis != lang.Coords && IsCoordinate(obj):
		c.errorf(id.NamePos, "%s cannot read %s, which is per coordinate: the state holds one value %s; start it from numbers and hypers", s.where, id.Name, s.axis.Per())
	case obj.Name == "g" && obj.Kind == BuiltinObj && (s.initOnly || s.observe):
		c.errorf(id.NamePos, "privacy: %s cannot read g; gradient information enters only through g, the privatized gradient, and only inside step", s.where)
	case s.coords && obj.Kind != HyperObj:
		c.errorf(id.NamePos, "%s may use only numbers, hypers, theta and g, not %s %s", s.where, kindName(obj.Kind), id.Name)
	case s.initOnly && obj.Kind != HyperObj:
		c.errorf(id.NamePos, "%s may use only numbers and hypers, not %s %s", s.where, kindName(obj.Kind), id.Name)
	case s.observe && obj.Varying:
		c.errorf(id.NamePos, "%s must be per-step uniform, but %s is per-coordinate", s.where, id.Name)
	case s.observe && obj.Kind == ScalarObj:
		c.errorf(id.NamePos, "%s may use only numbers, hypers and t, not scalar %s", s.where, id.Name)
	case s.host && obj.Varying && obj.Axis != lang.Coords:
		c.errorf(id.NamePos, "the host block computes the scalars once per step, in float64, and reads no value of a tensor; %s is %s", id.Name, obj.Axis.Per())
	case s.host && obj.Varying:
		c.errorf(id.NamePos, "the host block computes the scalars once per step, in float64: it may read numbers, hypers, t, sigma_w2, scalars, the attenuations and its own locals, not per-coordinate %s", id.Name)
	case !s.host && obj.Host:
		c.errorf(id.NamePos, "%s is a local of the host block, which only the host block reads; keep the value in a scalar to read it in step", id.Name)
	case s.observe && obj.Name == "sigma_w2":
		// The runtime computes the observation from the hypers and t.
		c.errorf(id.NamePos, "%s may use only numbers, hypers and t, not built-in sigma_w2", s.where)
	}
}

// IsCoordinate reports whether obj is theta or g, the per-coordinate
// values a state's initial value may read (which make it a start: docs/dsl.md).
func IsCoordinate(obj *Object) bool {
	return obj.Kind == BuiltinObj && (obj.Name == "theta" || obj.Name == "g")
}

func (c *checker) binary(x *BinaryExpr, s *scope) value {
	isCond := x == c.cond // before the operands, whose selects mark their own conditions
	a, b := c.expr(x.X, s), c.expr(x.Y, s)
	v := a.with(b)
	v.isConst = a.isConst && b.isConst
	switch x.Op {
	case QUO:
		if b.isConst && b.c == 0 {
			c.errorf(x.OpPos, "division by zero")
		}
	case POW:
		c.checkPow(x, a, b)
	}
	if x.Op.Op().IsComparison() && !isCond {
		c.errorf(x.OpPos, "a comparison is a condition: use it as the first argument of select(condition, a, b), which gives a where it holds and b elsewhere")
	}
	if v.isConst {
		v.c = fold(x.Op.Op(), a.c, b.c)
		c.checkFinite(x, x.OpPos, v.c, a.c, b.c)
	}
	return v
}

// checkFinite reports a constant expression x whose value c is NaN or
// infinite although its operands are finite (where one is not, the error
// is that operand's): as 1e999 is an error, so is 10 ** 400.
func (c *checker) checkFinite(x Expr, pos Pos, v float64, operands ...float64) {
	if !math.IsNaN(v) && !math.IsInf(v, 0) {
		return
	}
	for _, o := range operands {
		if math.IsNaN(o) || math.IsInf(o, 0) {
			return
		}
	}
	text := ExprString(x)
	if len(text) > 60 {
		text = text[:57] + "..."
	}
	c.errorf(pos, "the constant %s is %v: constants must be finite (float64)", text, v)
}

// checkPow enforces that exponents are uniform and, for a per-coordinate
// base, a small integer constant (expanded into multiplications so that
// every target computes the same bits). A power of uniform values or of
// values along one line axis is the host's, in float64 (math.Pow).
func (c *checker) checkPow(x *BinaryExpr, base, exp value) {
	onHost := base.with(exp)
	onHost.varying = onHost.varying && onHost.axis == lang.Coords
	switch {
	case base.isConst && base.c == 0 && exp.isConst && exp.c < 0:
		c.errorf(x.OpPos, "division by zero (0 to a negative power)")
	case !onHost.varying:
	case exp.varying && exp.axis != lang.Coords:
		c.errorf(x.Y.Pos(), "exponent of ** is %s and the base %s: the power is per coordinate, where the kernel raises only to constant integers", exp.axis.Per(), map[bool]string{true: base.axis.Per(), false: "per-step uniform"}[base.varying])
	case exp.varying:
		c.errorf(x.Y.Pos(), "exponent of ** must be per-step uniform, but it is per-coordinate")
	case base.varying && !exp.isConst:
		c.errorf(x.Y.Pos(), "with a per-coordinate base the exponent of ** must be a constant integer (x ** 2); a per-step exponent works only on per-step values")
	case base.varying && (exp.c == 0.5 || exp.c == -0.5):
		hint := map[bool]string{true: "sqrt(x)", false: "1 / sqrt(x)"}[exp.c > 0]
		c.errorf(x.Y.Pos(), "with a per-coordinate base the exponent of ** must be an integer, not %g: for a square root write %s, which every target rounds alike", exp.c, hint)
	case base.varying && (exp.c != math.Trunc(exp.c) || math.Abs(exp.c) > lang.MaxPowExponent):
		c.errorf(x.Y.Pos(), "with a per-coordinate base the exponent of ** must be an integer between -%d and %d, not %g", lang.MaxPowExponent, lang.MaxPowExponent, exp.c)
	}
}

func (c *checker) call(x *CallExpr, s *scope) value {
	obj := universe[x.Fun.Name]
	if obj == nil || obj.Kind != FuncObj {
		c.callee(x.Fun, s)
		for _, a := range x.Args {
			c.expr(a, s)
		}
		return value{}
	}
	if IsReductionCall(x) {
		c.reduction(x, s)
		return value{}
	}
	if axis, ok := lang.LineReductions[x.Fun.Name]; ok {
		c.lineReduction(x, axis, s)
		return value{varying: true, axis: axis}
	}
	if len(x.Args) != obj.Arity {
		c.errorf(x.Fun.NamePos, "%s takes %d argument%s, got %d", obj.Name, obj.Arity, plural(obj.Arity), len(x.Args))
	}
	if IsAttenuation(obj.Name) {
		c.attenuation(x, s)
		return value{}
	}
	v := value{isConst: len(x.Args) == obj.Arity}
	if obj.Name == "select" && len(x.Args) > 0 {
		c.condition(x.Args[0])
	}
	args := make([]float64, len(x.Args))
	for i, a := range x.Args {
		av := c.expr(a, s)
		v = v.with(av)
		v.isConst = v.isConst && av.isConst
		args[i] = av.c
	}
	if op := lang.Calls[obj.Name]; op.HostOnly() && v.varying && v.axis == lang.Coords {
		c.errorf(x.Fun.NamePos, "%s of a per-coordinate value: exp, log, sin and cos are computed on the host, in float64, once per step, and the kernels have none; apply %s to hypers, t and sigma_w2 (a schedule) or to values per row or per column, which the host computes too", obj.Name, obj.Name)
	}
	if v.isConst {
		v.c = fold(lang.Calls[obj.Name], args...)
		c.checkFinite(x, x.Fun.NamePos, v.c, args...)
	}
	return v
}

// condition marks select's first argument as the comparison it must be.
func (c *checker) condition(x Expr) {
	if b, ok := Unparen(x).(*BinaryExpr); ok && b.Op.Op().IsComparison() {
		c.cond = b
		return
	}
	c.errorf(x.Pos(), "the first argument of select must be a comparison: a < b, a <= b, a > b, a >= b, a == b or a != b")
}

// callee reports a call of something that is not a function.
func (c *checker) callee(id *Ident, s *scope) {
	if obj := c.names[id.Name]; obj != nil || universe[id.Name] != nil {
		c.errorf(id.NamePos, "%s is not a function", id.Name)
		return
	}
	c.errorf(id.NamePos, "undefined function %s (the functions are %s)", id.Name, functionList)
}

// functionList names the built-in functions for an error message.
var functionList = func() string {
	names := slices.Sorted(maps.Keys(lang.Calls))
	return strings.Join(names, ", ") + ", " + strings.Join(Reductions, ", ") + ", " + strings.Join(slices.Sorted(maps.Keys(lang.LineReductions)), ", ") + ", attenuation and attenuation_t"
}()

// Reductions are the per-tensor reductions of step (docs/dsl.md,
// "Per-tensor reductions"): the sum, the Euclidean norm and the mean of a
// per-coordinate value over each tensor; max and min of one argument
// (Extremes) are its maximum and minimum.
var Reductions = []string{"norm", "sum", "mean"}

// Extremes are the functions that are a per-tensor reduction with one
// argument and the elementwise operation with two, as torch.max is.
var Extremes = []string{"max", "min"}

// IsReductionCall reports whether x is a per-tensor reduction: a call of
// one of Reductions, or of one of Extremes with one argument.
func IsReductionCall(x *CallExpr) bool {
	return slices.Contains(Reductions, x.Fun.Name) || slices.Contains(Extremes, x.Fun.Name) && len(x.Args) == 1
}

// reduction checks norm(x), sum(x), mean(x), max(x) and min(x): in step, outside its host
// block, of a per-coordinate x (or one per row or per column, reduced over
// the tensor's rows or columns), in a file without a noise block. The value
// is per-step uniform (one per tensor). That x reads no other reduction is
// checked when lowering, which sees through the states.
func (c *checker) reduction(x *CallExpr, s *scope) {
	if !c.reductionPlaced(x, s) {
		return
	}
	if a := c.expr(x.Args[0], s); !a.varying {
		c.errorf(x.Args[0].Pos(), "%s reduces a per-coordinate value over each tensor, but %s is per-step uniform", x.Fun.Name, ExprString(x.Args[0]))
	}
}

// lineReduction checks rowsum(x), rowmean(x), colsum(x) and colmean(x),
// whose value is per row or per column (axis): placed as any reduction,
// of a per-coordinate x.
func (c *checker) lineReduction(x *CallExpr, axis lang.Axis, s *scope) {
	if !c.reductionPlaced(x, s) {
		return
	}
	a := c.expr(x.Args[0], s)
	line := axis.Line()
	switch {
	case !a.varying:
		c.errorf(x.Args[0].Pos(), "%s reduces a per-coordinate value along each %s of a 2-D tensor, but %s is per-step uniform", x.Fun.Name, line, ExprString(x.Args[0]))
	case a.axis != lang.Coords:
		c.errorf(x.Args[0].Pos(), "%s reduces a per-coordinate value along each %s of a 2-D tensor, but %s is %s: sum and mean reduce it over the tensor", x.Fun.Name, line, ExprString(x.Args[0]), a.axis.Per())
	}
}

// reductionPlaced reports the rules every reduction x shares: in step,
// outside its host block, in a file without a noise block, with one
// argument; it reports whether x has the one argument to check.
func (c *checker) reductionPlaced(x *CallExpr, s *scope) bool {
	if s.initOnly || s.observe || s.noise || s.host {
		c.errorf(x.Fun.NamePos, "%s cannot use %s: a reduction is computed between two passes over the coordinates, so only step (outside its host block) has it", s.where, x.Fun.Name)
	}
	if c.f.Noise != nil {
		c.errorf(x.Fun.NamePos, "%s cannot be used with a noise block yet: the reduction pass would have to draw the correlated noise the step draws (docs/dsl.md, \"Per-tensor reductions\")", x.Fun.Name)
	}
	if len(x.Args) != 1 {
		c.errorf(x.Fun.NamePos, "%s takes 1 argument, got %d", x.Fun.Name, len(x.Args))
		return false
	}
	return true
}

// IsAttenuation reports whether name is attenuation or attenuation_t, the
// functions of a state whose value the compiler derives.
func IsAttenuation(name string) bool { return name == "attenuation" || name == "attenuation_t" }

// attenuation checks attenuation(STATE) and attenuation_t(STATE): the
// argument names a state, and the call is in step, where the filter that
// carries the noise into the state is written. Whether the noise reaches the
// state linearly is decided when lowering (package ir).
func (c *checker) attenuation(x *CallExpr, s *scope) {
	if s.initOnly || s.observe || s.noise {
		c.errorf(x.Fun.NamePos, "%s cannot use %s: the noise gain of a state is known only inside step", s.where, x.Fun.Name)
		return
	}
	if len(x.Args) != 1 {
		return
	}
	id, ok := Unparen(x.Args[0]).(*Ident)
	if !ok || c.names[id.Name] == nil || c.names[id.Name].Kind != StateObj {
		c.errorf(x.Args[0].Pos(), "the argument of %s must be the name of a state", x.Fun.Name)
		return
	}
	if obj := c.names[id.Name]; obj.Axis != lang.Coords {
		c.errorf(x.Args[0].Pos(), "%s of state %s, which is %s: the noise gain is derived for the filters of states per coordinate; a state per row or column reads the noise through a sum along its lines", x.Fun.Name, id.Name, obj.Axis.Per())
	}
	c.info.Uses[id] = c.names[id.Name]
}

// Unparen returns x without the parentheses around it.
func Unparen(x Expr) Expr {
	for {
		p, ok := x.(*ParenExpr)
		if !ok {
			return x
		}
		x = p.X
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
