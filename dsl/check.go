package dsl

import (
	"math"
	"slices"
	"strings"

	"github.com/fibergen/fibergen/lang"
)

// ObjKind says what a name refers to.
type ObjKind int

// The kinds of objects.
const (
	BadObj     ObjKind = iota
	HyperObj           // hyper lr = 1e-3
	StateObj           // state m = 0
	LocalObj           // nu = g - gt inside step
	BuiltinObj         // g, theta, t, sigma_w2
	FuncObj            // sqrt, abs, sign, min, max, attenuation, attenuation_t
	ScalarObj          // scalar c = 0
	BufferObj          // buffer s inside noise { ... }
)

// Object is what an identifier denotes.
type Object struct {
	Kind    ObjKind
	Name    string
	Pos     Pos       // where it is declared or bound; invalid for built-ins
	Varying bool      // per-coordinate (true) or per-step uniform (false)
	Axis    lang.Axis // with Varying: per coordinate, or per row or column of a 2-D tensor
	Host    bool      // a local of the step's host block
	Noise   bool      // a buffer or a local of the noise block, which only the noise block reads
	Arity   int       // for FuncObj

	uses int
}

// The built-in values and functions: the language's operations that are
// functions (lang.Calls, with their arities) and the attenuations.
var universe = func() map[string]*Object {
	u := map[string]*Object{
		"g":             {Kind: BuiltinObj, Name: "g", Varying: true},
		"theta":         {Kind: BuiltinObj, Name: "theta", Varying: true},
		"t":             {Kind: BuiltinObj, Name: "t"},
		"sigma_w2":      {Kind: BuiltinObj, Name: "sigma_w2"},
		"attenuation":   {Kind: FuncObj, Name: "attenuation", Arity: 1},
		"attenuation_t": {Kind: FuncObj, Name: "attenuation_t", Arity: 1},
	}
	for _, name := range Reductions {
		u[name] = &Object{Kind: FuncObj, Name: name, Arity: 1}
	}
	for name := range lang.LineReductions {
		u[name] = &Object{Kind: FuncObj, Name: name, Arity: 1}
	}
	for name, op := range lang.Calls {
		u[name] = &Object{Kind: FuncObj, Name: name, Arity: op.Arity()}
	}
	return u
}()

// Builtin returns the object of a built-in name, or nil.
func Builtin(name string) *Object { return universe[name] }

// Info is what Check learns about a file.
type Info struct {
	Uses    map[*Ident]*Object      // every identifier that is read
	Defs    map[*AssignStmt]*Object // what each statement of step or noise assigns
	Consts  map[Expr]float64        // expressions made of literals only
	Hypers  []*Object               // in declaration order
	States  []*Object               // in declaration order
	Scalars []*Object               // in declaration order
	Buffers []*Object               // the noise block's buffers, in declaration order
	Locals  []*Object               // in binding order
	// Warnings are what is legal but likely a mistake (an unused hyper, a
	// state nothing reads), "warning: ..." at its position, for a file
	// without errors; fibergen check prints them.
	Warnings ErrorList
}

// Check resolves names and enforces the language rules on a parsed file.
// The returned ErrorList is normalized; Info is usable only when it is empty.
func Check(f *File) (*Info, ErrorList) {
	info, errs := check(f, false)
	errs.Normalize()
	return info, errs
}

// check is Check without the normalization of the errors. For a partial
// file, one with syntax errors, it leaves out the checks that need the whole
// step block (states and theta updated, locals used).
func check(f *File, partial bool) (*Info, ErrorList) {
	c := &checker{f: f, partial: partial, names: map[string]*Object{}, info: &Info{
		Uses:   map[*Ident]*Object{},
		Defs:   map[*AssignStmt]*Object{},
		Consts: map[Expr]float64{},
	}}
	c.checkOptimizer()
	c.checkLimits()
	c.declareHypers()
	c.declareStates()
	c.declareScalars()
	c.checkObserve()
	c.checkNoise()
	c.checkHost()
	c.checkStep()
	if !partial && len(c.errs) == 0 {
		c.warnUnused()
	}
	return c.info, c.errs
}

// checkLimits reports a file past MaxStates or MaxStatements.
func (c *checker) checkLimits() {
	if len(c.f.States) > MaxStates {
		c.errorf(c.f.States[MaxStates].Keyword, "more than %d states: each is a parameter of the kernels, and CUDA limits a kernel's parameters to 4 KiB", MaxStates)
	}
	if d := c.f.Noise; d != nil && len(c.f.States) <= MaxStates && len(c.f.States)+len(d.Buffers) > MaxStates {
		c.errorf(d.Buffers[MaxStates-len(c.f.States)].Keyword, "more than %d states and noise buffers: each is a parameter of the kernels, and CUDA limits a kernel's parameters to 4 KiB", MaxStates)
	}
	if d := c.f.Noise; d != nil && len(d.Body) > MaxStatements {
		c.errorf(d.Body[MaxStatements].LHS.NamePos, "more than %d statements in the noise block", MaxStatements)
	}
	if c.f.Step != nil && len(c.f.Step.Body) > MaxStatements {
		c.errorf(c.f.Step.Body[MaxStatements].LHS.NamePos, "more than %d statements in step", MaxStatements)
	}
}

// Parse parses and checks src in one call; the errors of both phases are
// merged into one normalized list. The checker's errors that are often
// consequences of a syntax error are left out: those on the lines of syntax
// errors and the whole-block checks (never updated, never used).
func Parse(filename string, src []byte) (*File, *Info, ErrorList) {
	f, errs := parse(filename, src)
	if len(src) > MaxSourceBytes {
		return f, &Info{}, errs // not parsed: nothing to check
	}
	info, cerrs := check(f, len(errs) > 0)
	syntax := map[int]bool{}
	for _, e := range errs {
		syntax[e.Pos.Line] = true
	}
	for _, e := range cerrs {
		if !syntax[e.Pos.Line] {
			errs = append(errs, e)
		}
	}
	errs.Normalize()
	return f, info, errs
}

type checker struct {
	f       *File
	partial bool // the file has syntax errors
	info    *Info
	errs    ErrorList
	names   map[string]*Object // hypers, states and step locals
	cond    *BinaryExpr        // the comparison being checked as select's condition
	// suggested is the work nearNames has done for undefined names so
	// far (names looked at, edit-distance table cells), which
	// suggestBudget bounds.
	suggested int
}

func (c *checker) errorf(pos Pos, format string, args ...any) { c.errs.Addf(pos, format, args...) }

// MaxNameLen is the longest optimizer name: it names a Go package, a
// directory and the files in it, and file names stop at 255 bytes.
const MaxNameLen = 64

func (c *checker) checkOptimizer() {
	d := c.f.Optimizer
	if d == nil {
		c.errorf(Pos{Filename: c.f.Filename, Line: 1, Column: 1}, "missing optimizer declaration (optimizer NAME)")
		return
	}
	if d.Name == nil || d.Name.Name == "" {
		return
	}
	switch name := d.Name.Name; {
	case name == "main" || name == "init" || goKeywords[name]:
		c.errorf(d.Name.NamePos, "optimizer name %s is reserved in Go (it names the generated Go package); choose another", name)
	case strings.HasSuffix(name, "_test"):
		c.errorf(d.Name.NamePos, "optimizer name %s ends in _test: Go would take the generated %s.go for a test file; choose another", name, name)
	case len(name) > MaxNameLen:
		c.errorf(d.Name.NamePos, "optimizer name is %d characters long; at most %d (it names a Go package, a directory and its files)", len(name), MaxNameLen)
	case !isPackageName(name):
		c.errorf(d.Name.NamePos, "optimizer name %s must be lower case letters, digits and _ starting with a letter (it names a Go package and a directory)", name)
	}
}

func isPackageName(s string) bool {
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch >= 'a' && ch <= 'z' || i > 0 && (isDigit(ch) || ch == '_')) {
			return false
		}
	}
	return s != "" && !goKeywords[s]
}

var goKeywords = map[string]bool{
	"break": true, "case": true, "chan": true, "const": true, "continue": true, "default": true,
	"defer": true, "else": true, "fallthrough": true, "for": true, "func": true, "go": true,
	"goto": true, "if": true, "import": true, "interface": true, "map": true, "package": true,
	"range": true, "return": true, "select": true, "struct": true, "switch": true, "type": true, "var": true,
}

// declare introduces a hyper, state or local name, reporting clashes.
func (c *checker) declare(id *Ident, obj *Object) bool {
	switch id.Name {
	case "":
		return false // reported by the parser
	case "_":
		c.errorf(id.NamePos, "cannot declare _: the blank name names nothing")
		return false
	}
	if b := universe[id.Name]; b != nil {
		c.errorf(id.NamePos, "%s is a built-in name and cannot be redeclared", id.Name)
		return false
	}
	if prev := c.names[id.Name]; prev != nil {
		c.errorf(id.NamePos, "%s redeclared: already declared as %s at %s", id.Name, kindName(prev.Kind), prev.Pos.LineCol())
		return false
	}
	c.names[id.Name] = obj
	return true
}

func kindName(k ObjKind) string {
	switch k {
	case HyperObj:
		return "hyper"
	case StateObj:
		return "state"
	case LocalObj:
		return "local"
	case BuiltinObj:
		return "built-in"
	case FuncObj:
		return "function"
	case ScalarObj:
		return "scalar"
	case BufferObj:
		return "noise buffer"
	}
	return "name"
}

func (c *checker) declareHypers() {
	defaults := map[string]float64{}
	for i, d := range c.f.Hypers {
		if d.Default != nil {
			defaults[d.Name.Name] = d.Default.Value
		} else if c.checkDerivedDefault(d, c.f.Hypers[i:]) {
			defaults[d.Name.Name] = c.checkDerivedValue(d, defaults)
		}
		obj := &Object{Kind: HyperObj, Name: d.Name.Name, Pos: d.Name.NamePos}
		if c.declare(d.Name, obj) {
			c.info.Hypers = append(c.info.Hypers, obj)
		}
		if what := torchKeys[d.Name.Name]; what != "" {
			c.errorf(d.Name.NamePos, "hyper %s: its name is a key of torch's param groups (%s); choose another", d.Name.Name, what)
		}
		c.checkRange(d)
	}
	c.checkAliases()
}

// checkDerivedDefault checks a default written as an expression: numbers,
// functions and the hypers declared before d (not d or those after it,
// rest). It reports whether the expression is well formed.
func (c *checker) checkDerivedDefault(d *HyperDecl, rest []*HyperDecl) bool {
	later := map[string]bool{}
	for _, h := range rest {
		later[h.Name.Name] = true
	}
	bad := false
	Inspect(d.DefaultExpr, func(x Expr) bool {
		if id, ok := x.(*Ident); ok && later[id.Name] && !bad {
			c.errorf(id.NamePos, "the default of hyper %s may read only hypers declared before it, not %s", d.Name.Name, id.Name)
			bad = true
		}
		return !bad
	})
	if bad {
		return false
	}
	n := len(c.errs)
	c.expr(d.DefaultExpr, &scope{where: "the default of hyper " + d.Name.Name, initOnly: true})
	return len(c.errs) == n
}

// checkDerivedValue computes a derived default at the other defaults (as
// the compiler does, lang.EvalN) and reports one that is not finite or
// outside the hyper's range.
func (c *checker) checkDerivedValue(d *HyperDecl, defaults map[string]float64) float64 {
	v := evalAt(d.DefaultExpr, defaults)
	text, r := ExprString(d.DefaultExpr), d.Range
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		c.errorf(d.DefaultExpr.Pos(), "default %s of hyper %s is %v: it must be finite", text, d.Name.Name, v)
	case r != nil && !emptyRange(r) && !r.Contains(v):
		c.errorf(d.DefaultExpr.Pos(), "default %s = %v of hyper %s is outside its range %s", text, v, d.Name.Name, r)
	}
	return v
}

// emptyRange reports whether r contains no number (NaN bounds: reported
// by the parser, taken as empty here).
func emptyRange(r *Range) bool {
	return !(r.Lo < r.Hi || r.Lo == r.Hi && !r.LoOpen && !r.HiOpen)
}

// evalAt evaluates a checked expression of numbers, functions and the
// names in vals.
func evalAt(x Expr, vals map[string]float64) float64 {
	switch x := x.(type) {
	case *NumberLit:
		return x.Value
	case *Ident:
		return vals[x.Name]
	case *ParenExpr:
		return evalAt(x.X, vals)
	case *UnaryExpr:
		return -evalAt(x.X, vals)
	case *BinaryExpr:
		return fold(x.Op.Op(), evalAt(x.X, vals), evalAt(x.Y, vals))
	case *CallExpr:
		args := make([]float64, len(x.Args))
		for i, a := range x.Args {
			args[i] = evalAt(a, vals)
		}
		return fold(lang.Calls[x.Fun.Name], args...)
	}
	return math.NaN()
}

func (c *checker) checkRange(d *HyperDecl) {
	r := d.Range
	if r == nil || math.IsNaN(r.Lo) || math.IsNaN(r.Hi) {
		return
	}
	if emptyRange(r) {
		c.errorf(r.Open, "range %s of hyper %s is empty", r, d.Name.Name)
		return
	}
	if d.Default != nil && !r.Contains(d.Default.Value) { // an expression's value is checked when lowering
		c.errorf(d.Default.ValuePos, "default %s of hyper %s is outside its range %s", d.Default.Lit, d.Name.Name, r)
	}
}

func (c *checker) declareScalars() {
	for _, d := range c.f.Scalars {
		obj := &Object{Kind: ScalarObj, Name: d.Name.Name, Pos: d.Name.NamePos}
		if c.declare(d.Name, obj) {
			c.info.Scalars = append(c.info.Scalars, obj)
		}
		c.expr(d.Init, &scope{where: "the initial value of scalar " + d.Name.Name, initOnly: true})
	}
}

func (c *checker) declareStates() {
	for _, d := range c.f.States {
		obj := &Object{Kind: StateObj, Name: d.Name.Name, Pos: d.Name.NamePos, Varying: true}
		if d.Axis != nil {
			obj.Axis = lang.AxisWords[d.Axis.Name]
		}
		if c.declare(d.Name, obj) {
			c.info.States = append(c.info.States, obj)
		}
		c.expr(d.Init, &scope{where: "the initial value of state " + d.Name.Name, initOnly: true, coords: obj.Axis == lang.Coords, axis: obj.Axis})
		c.checkStorage(d)
	}
}

// checkStorage checks a state's storage type and rounding: a type fibergen
// stores, and stochastic only where a store rounds.
func (c *checker) checkStorage(d *StateDecl) {
	switch {
	case d.Type == nil:
		return
	case d.Axis != nil && d.Type.Name == d.Axis.Name:
		c.errorf(d.Type.NamePos, "state %s is declared %s twice", d.Name.Name, d.Axis.Name)
	case d.Axis != nil && lang.AxisWords[d.Type.Name] != lang.Coords:
		c.errorf(d.Type.NamePos, "state %s is declared %s and %s: a state holds one value per row or one per column, not both (a value per coordinate is a state without either)", d.Name.Name, d.Axis.Name, d.Type.Name)
	case d.Axis != nil:
		c.errorf(d.Type.NamePos, "state %s is %s and holds float32: it is one value a %s, where a storage type saves nothing; remove %s", d.Name.Name, lang.AxisWords[d.Axis.Name].Per(), lang.AxisWords[d.Axis.Name].Line(), d.Type.Name)
	case !slices.Contains(lang.DTypes, lang.DType(d.Type.Name)) && d.Axis == nil && nearAxis(d.Type.Name) != "":
		c.errorf(d.Type.NamePos, "unknown storage type %s: fibergen stores %s (did you mean %s, a state per %s?)", d.Type.Name, lang.DTypeList("and"), nearAxis(d.Type.Name), lang.AxisWords[nearAxis(d.Type.Name)].Line())
	case !slices.Contains(lang.DTypes, lang.DType(d.Type.Name)):
		c.errorf(d.Type.NamePos, "unknown storage type %s: fibergen stores %s", d.Type.Name, lang.DTypeList("and"))
	case d.Rounding == nil:
	case lang.AxisWords[d.Rounding.Name] != lang.Coords:
		c.errorf(d.Rounding.NamePos, "%s after the storage type %s: a state per row or per column holds float32: declare it as state %s: %s = …", d.Rounding.Name, d.Type.Name, d.Name.Name, d.Rounding.Name)
	case d.Rounding.Name != lang.Stochastic:
		c.errorf(d.Rounding.NamePos, "unknown rounding %s after %s: write %s, or nothing to round to nearest", d.Rounding.Name, d.Type.Name, lang.Stochastic)
	case lang.DType(d.Type.Name) == lang.Float32:
		c.errorf(d.Rounding.NamePos, "stochastic rounding of an f32 state: f32 keeps every value the step computes, so nothing rounds; remove %s", lang.Stochastic)
	}
}

// nearAxis is the axis word that word misspells or says otherwise (row,
// column, columns), or "".
func nearAxis(word string) string {
	switch {
	case editDistance(word, "rows") == 1:
		return "rows"
	case editDistance(word, "cols") == 1 || word == "column" || word == "columns":
		return "cols"
	}
	return ""
}
