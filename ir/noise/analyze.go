package noise

import (
	"cmp"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/poly"
	"github.com/fibergen/fibergen/lang"
)

// The noise analysis: which states the DP noise in g reaches, and how. A
// state carries the noise linearly when its new value is affine in g and in
// the previous values of the states, with coefficients that are fixed over
// training (rational functions of the hypers). Those states form the linear
// model z_t = M z_{t-1} + b w_t that Lyapunov solves.

// Analysis is what the noise analysis finds in a step block.
type Analysis struct {
	// Symbols are the variables of every fraction in the models: hypers
	// (OpHyper values) and uniform values that are not rational in the hypers,
	// such as sqrt(kappa), which stand for themselves.
	Symbols []*ir.Value
	States  []StateNoise // one per declared state, in declaration order
	Noise   *NoiseModel  // the noise block's filter; nil without one
}

// NoiseModel is the noise block's filter over its buffers s (docs/dsl.md,
// "Correlated noise"): s_{t+1} = M s_t + B z_t and w_t = H·s_t + D z_t,
// z_t the step's fresh draw. With a noise block the analysis's input is z
// (keyed GradName in the linear forms), and g is the clean clipped mean
// plus w: the states' models are those of the joint system.
type NoiseModel struct {
	Buffers []string
	M       [][]poly.Frac
	B, H    []poly.Frac
	D       poly.Frac
}

// StateNoise says how the noise reaches one state.
type StateNoise struct {
	State string
	Model *Model // nil when the noise does not reach the state linearly
	Why   string // why Model is nil
	// Start, where set, says how step 0 departs from Model (or Varying):
	// a state of the model starts from another value (a select on the
	// first step), which the steady attenuation does not see but
	// attenuation_t would.
	Start string
	// Varying, set only where Model is nil and only because coefficients
	// change from step to step (they read t or scalars, which Why names),
	// is the model with those coefficients as symbols of their own: the
	// host follows its covariance step by step for attenuation_t.
	Varying *Model
	// Growth, set only where Model is nil because a reduction adds noise
	// to a recursion that is otherwise linear (v = rho * v + mean(g)), is
	// that recursion: it has no attenuation, but its growth is checked as
	// a model's is.
	Growth *Model
}

// Model is the linear model by which the noise w reaches State:
// z_t = M z_{t-1} + b w_t, where z holds State and every state whose
// previous value reaches it, and State is z[Target].
type Model struct {
	State  string
	States []string // z, in declaration order (theta last, if it is there)
	Target int
	M      [][]poly.Frac
	B      []poly.Frac
}

// formKind classifies a value for the noise analysis.
type formKind uint8

const (
	uniformForm   formKind = iota // a per-step scalar: coef holds its value
	cleanForm                     // per-coordinate, and the noise never reaches it
	linearForm                    // affine in the noisy inputs: lin
	nonlinearForm                 // the noise reaches it, but not linearly: why
)

// coef is the value of a uniform value as a rational function of the
// symbols, or the expression that makes it change from step to step.
type coef struct {
	f      poly.Frac
	moving string // non-empty: why it is not a fixed function of the hypers ("changes from step to step (it reads t)")
	// varying marks a moving coefficient that f still gives exactly, over
	// symbols some of which change from step to step (VaryingSymbol).
	varying bool
}

// form is what the analysis knows about one value.
type form struct {
	kind formKind
	c    coef            // uniformForm
	lin  map[string]coef // linearForm: coefficient of g and of each noisy state's previous value
	why  string          // nonlinearForm
	at   *ir.Value       // nonlinearForm: the value the reason is about
	// noisy is, for a uniformForm (or a line value's), the value through
	// which it reads the noise: a reduction of a noisy term, a sum over
	// coordinates (nil: none); for a linearForm, such a value added to it,
	// an input besides g, which the model does not carry.
	noisy *ir.Value
}

// noiseAnalyzer runs the analysis over one step block.
type noiseAnalyzer struct {
	states     []string // the declared states, then theta
	describe   func(v *ir.Value) string
	symbols    []*ir.Value
	symIndex   map[string]int
	noisy      map[string]bool      // g and the states whose update reads the noise
	terms      map[string]*ir.Value // the term of each reduction the step reads (r<i>), a value of the step
	noisyTerms map[string]bool      // the reductions whose term reads the noise
	carries    map[*ir.Value]bool   // the values that read the noise (formOf's, in block order)
	forms      map[*ir.Value]form
	updates    map[string]form      // the form of each state's new value
	stores     map[string]*ir.Value // the store of each state's new value
	storeOrder []string             // the stored names, in the order of their stores
	first      map[*ir.Value]bool   // the selects on the first step (ir.IsFirstStep), seen through
	// lineVars: the states per row or column are variables too
	// (Recursions), not coefficients that move.
	lineVars bool
}

// newAnalyzer prepares the analysis of fn's step block; describe and terms
// are Analyze's.
func newAnalyzer(fn *ir.Func, describe func(*ir.Value) string, terms []*ir.Value) *noiseAnalyzer {
	if describe == nil {
		describe = func(v *ir.Value) string { return "`" + ir.ExprString(v) + "`" }
	}
	a := &noiseAnalyzer{
		states:   append(slices.Clone(fn.States), ir.ThetaName),
		describe: describe,
		symIndex: map[string]int{},
		forms:    map[*ir.Value]form{},
		updates:  map[string]form{},
		stores:   map[string]*ir.Value{},
		first:    map[*ir.Value]bool{},
		terms:    termsByName(terms), noisyTerms: map[string]bool{}, carries: map[*ir.Value]bool{},
	}
	return a
}

// termsByName maps each reduction's name (r<i>) to its term, terms[i].
func termsByName(terms []*ir.Value) map[string]*ir.Value {
	out := map[string]*ir.Value{}
	for i, t := range terms {
		out[ir.ReduceTerm(i)] = t
	}
	return out
}

// formsOf derives the form of every value of b, and each state's update.
func (a *noiseAnalyzer) formsOf(b *ir.Block) {
	for _, v := range b.Values {
		a.forms[v] = a.formOf(v)
		if v.Op == ir.OpStore {
			a.updates[v.Name], a.stores[v.Name] = a.forms[v], v // the value's form, or where a reduction carries the noise to it, not linear
			a.storeOrder = append(a.storeOrder, v.Name)
		}
	}
}

// Recursions runs the analysis once more for each group of states that
// read one another's previous values (a cycle of the step's dependences),
// with those states as the variables and everything else — g, a noise
// block's draw, other states — as inputs: the recursion of each state
// whose update is linear, with fixed coefficients, in its group's previous
// values, whatever the rest of it reads (Adam's v = b2 * v + (1 - b2) *
// g * g: M = [[b2]]; FiBeR's v reads gt * gt, an input from a group of its
// own). The growth check of the states the noise does not reach linearly
// takes them (lower's boundFilters); symbols are the models' variables.
// The states per coordinate are modelled among themselves, a value per row
// or column an input (along a row it is the same at every coordinate, so
// the coordinates' differences grow by the state's own recursion); the
// states per row or column then among all states, as variables too.
func Recursions(fn *ir.Func, terms []*ir.Value) (models map[string]*Model, symbols []*ir.Value) {
	models = map[string]*Model{}
	var all []*ir.Value
	index := map[string]int{} // the symbols' keys, shared so that every model's fractions index all
	for _, lines := range []bool{false, true} {
		states, modelled := fn.States, fn.States
		if lines {
			states, modelled = recurrent(fn), fn.LineStateNames()
		}
		groups := stateGroups(fn, terms, states)
		for _, s := range modelled {
			if models[s] != nil || groups[s] == nil {
				continue
			}
			a := newAnalyzer(fn, nil, terms)
			a.states, a.lineVars = append(slices.Clone(states), ir.ThetaName), lines
			a.symbols, a.symIndex = all, index
			a.noisy = map[string]bool{}
			for _, x := range groups[s] {
				a.noisy[x] = true
			}
			a.markTerms() // the other states, theta among them, stay inputs: the group's recursion alone
			a.formsOf(fn.Step)
			for _, x := range groups[s] {
				if m, _, kind := a.model(x); m != nil && kind != varyingModel && slices.Equal(m.States, groups[s]) && slices.Contains(modelled, x) {
					models[x] = m
				}
			}
			all = a.symbols
		}
	}
	return models, all
}

// stateGroups maps each state that reads its own previous value, through
// the step's values and the reductions' terms, to the states of its cycle
// of dependences in declaration order (itself among them), among states:
// x and y are in one group when each one's update reads the other's
// previous value.
func stateGroups(fn *ir.Func, terms []*ir.Value, states []string) map[string][]string {
	byName := termsByName(terms)
	reads := map[string]map[string]bool{} // theta's, an input, left out: a cycle through it is none
	for _, st := range fn.Step.Stores() {
		if slices.Contains(states, st.Name) {
			reads[st.Name] = loadsOf(st.Args[0], byName)
		}
	}
	reach := func(x string) map[string]bool { // the states x reads, directly or through other states
		seen := map[string]bool{}
		for work := []string{x}; len(work) > 0; {
			y := work[len(work)-1]
			work = work[:len(work)-1]
			for z := range reads[y] {
				if !seen[z] {
					seen[z] = true
					work = append(work, z)
				}
			}
		}
		return seen
	}
	out := map[string][]string{}
	from := map[string]map[string]bool{}
	for _, s := range states {
		from[s] = reach(s)
	}
	for _, s := range states {
		for _, x := range states {
			if from[s][x] && from[x][s] { // s itself only where it reads itself: a recursion
				out[s] = append(out[s], x)
			}
		}
	}
	return out
}

// recurrent are the states whose recursions Recursions models: those per
// coordinate, then those per row or per column.
func recurrent(fn *ir.Func) []string { return slices.Concat(fn.States, fn.LineStateNames()) }

// loadsOf is the states (and theta, g) whose previous values v reads,
// through the terms (by name) of the reductions it reads too.
func loadsOf(v *ir.Value, terms map[string]*ir.Value) map[string]bool {
	out, seen := map[string]bool{}, map[*ir.Value]bool{}
	var visit func(v *ir.Value)
	visit = func(v *ir.Value) {
		if seen[v] {
			return
		}
		seen[v] = true
		if v.Op == ir.OpLoad {
			out[v.Name] = true
		}
		if t := terms[readsReduction(v)]; t != nil {
			visit(t)
		}
		for _, a := range v.Args {
			visit(a)
		}
	}
	visit(v)
	return out
}

// Analyze runs the noise analysis over fn's step block. describe
// names a value in a message (nil: its expression); Lower passes one that
// quotes the source. terms are the step's values whose reductions the
// step reads (OpReduce … r<i> reduces terms[i]; nil for none): a
// reduction of a term that reads the noise carries the noise, through a
// sum over coordinates.
func Analyze(fn *ir.Func, describe func(*ir.Value) string, terms []*ir.Value) *Analysis {
	a := newAnalyzer(fn, describe, terms)
	a.findNoisy(fn.Step)
	a.formsOf(fn.Step)
	n := &Analysis{}
	if p := privatizeOf(fn.Step); p != nil {
		n.Noise = a.noiseModel(fn.NoiseBuffers(), a.forms[p.Args[1]])
	}
	n.Symbols = a.symbols
	for _, s := range fn.States {
		m, why, kind := a.model(s)
		sn := StateNoise{State: s, Why: why}
		if m != nil {
			sn.Start = a.start(m.States)
		}
		switch kind {
		case varyingModel:
			sn.Varying = m
		case growthModel:
			sn.Growth = m
		default:
			sn.Model = m
		}
		n.States = append(n.States, sn)
	}
	return n
}

// start quotes the select by which a state of z starts from another value
// at step 0, or is "" if none does.
func (a *noiseAnalyzer) start(z []string) string {
	for _, x := range z {
		if sel := a.firstSelect(a.stores[x], map[*ir.Value]bool{}); sel != nil {
			return a.describe(sel)
		}
	}
	return ""
}

// firstSelect returns a select on the first step that v reads, or nil.
func (a *noiseAnalyzer) firstSelect(v *ir.Value, seen map[*ir.Value]bool) *ir.Value {
	if v == nil || seen[v] {
		return nil
	}
	seen[v] = true
	if a.first[v] {
		return v
	}
	for _, x := range v.Args {
		if sel := a.firstSelect(x, seen); sel != nil {
			return sel
		}
	}
	return nil
}

// privatizeOf returns the step's OpPrivatize, the sum of the clipped mean
// and the noise block's w, or nil without a noise block.
func privatizeOf(b *ir.Block) *ir.Value {
	for _, v := range b.Values {
		if v.Op == ir.OpPrivatize {
			return v
		}
	}
	return nil
}

// noiseModel builds the noise block's model from the forms of the
// buffers' updates and of w, which the checker has made linear in z and
// the buffers with fixed coefficients.
func (a *noiseAnalyzer) noiseModel(buffers []string, w form) *NoiseModel {
	nm := &NoiseModel{Buffers: buffers, D: coefAt(w.lin, ir.GradName).f}
	for _, s := range buffers {
		u := a.updates[s]
		nm.M = append(nm.M, row(u, buffers))
		nm.B = append(nm.B, coefAt(u.lin, ir.GradName).f)
		nm.H = append(nm.H, coefAt(w.lin, s).f)
	}
	return nm
}

// findNoisy finds the states the noise reaches at all: g (z, with a noise
// block), and every state (or theta) whose update reads it or a noisy
// state, to a fixed point.
func (a *noiseAnalyzer) findNoisy(b *ir.Block) {
	a.noisy = map[string]bool{ir.GradName: privatizeOf(b) == nil}
	a.spread(b)
}

// spread marks noisy every state whose update reads a noisy state, g
// where it is noisy, or a reduction of a noisy term, to a fixed point.
func (a *noiseAnalyzer) spread(b *ir.Block) {
	for changed := true; changed; {
		changed = false
		for _, s := range b.Stores() {
			if !a.noisy[s.Name] && a.readsNoise(s.Args[0], map[*ir.Value]bool{}) {
				a.noisy[s.Name], changed = true, true
			}
		}
		changed = a.markTerms() || changed
	}
}

// markTerms marks noisy every reduction whose term reads the noise;
// it reports whether it marked one.
func (a *noiseAnalyzer) markTerms() bool {
	changed := false
	for name, t := range a.terms {
		if !a.noisyTerms[name] && a.readsNoise(t, map[*ir.Value]bool{}) {
			a.noisyTerms[name], changed = true, true
		}
	}
	return changed
}

// readsReduction is the reduction v reads, by its term's name, or "".
func readsReduction(v *ir.Value) string {
	if v.Op.IsReduce() || v.Op == ir.OpReduceRows || v.Op == ir.OpReduceCols {
		return v.Name
	}
	return ""
}

func (a *noiseAnalyzer) readsNoise(v *ir.Value, seen map[*ir.Value]bool) bool {
	if v.Op == ir.OpDraw {
		return true
	}
	if v.Op == ir.OpLoad {
		return a.noisy[v.Name]
	}
	if r := readsReduction(v); r != "" {
		return a.noisyTerms[r]
	}
	if seen[v] {
		return false
	}
	seen[v] = true
	for _, x := range v.Args {
		if a.readsNoise(x, seen) {
			return true
		}
	}
	return false
}

// formOf derives v's form from its operands' forms.
func (a *noiseAnalyzer) formOf(v *ir.Value) form {
	a.carries[v] = a.carriesNoise(v)
	f := a.formOfOp(v)
	switch {
	case f.kind == cleanForm && a.carries[v], v.Op == ir.OpStore && f.kind == uniformForm && f.noisy != nil: // through an operand that a reduction made noisy
		return a.throughReduction(v.Args...)
	case f.kind == uniformForm && a.carries[v] && v.Op == ir.OpF32:
		f.noisy = a.forms[v.Args[0]].noisy
	case f.kind == uniformForm && a.carries[v]:
		f.noisy = v
	}
	return f
}

// throughReductionWhy says how a value per tensor, row or column that
// reads the noise reaches a per-coordinate one.
const throughReductionWhy = "carries the noise through a reduction over the coordinates of a tensor, a row or a column (a sum, max or min), not coordinate by coordinate"

// throughReduction is the form of a value that reads the noise through
// the first of args that carries it through a reduction, a sum over
// coordinates: not linear coordinate by coordinate.
func (a *noiseAnalyzer) throughReduction(args ...*ir.Value) form {
	for _, x := range args {
		if n := a.forms[x].noisy; n != nil {
			return a.notLinearAt(n, throughReductionWhy)
		}
	}
	return form{kind: cleanForm}
}

// formOfOp derives v's form from its operation and its operands' forms.
func (a *noiseAnalyzer) formOfOp(v *ir.Value) form {
	if (v.Uniform || v.IsLine()) && !a.readsVariables(v.Args) && v.Op != ir.OpStore && v.Op != ir.OpLoad {
		return form{kind: uniformForm, c: a.coefOf(v)}
	}
	switch v.Op {
	case ir.OpLoad:
		if v.IsLine() && !(a.lineVars && a.noisy[v.Name]) { // a coefficient of the coordinates of its line
			return form{kind: uniformForm, c: coef{moving: lineMoving}}
		}
		if !a.noisy[v.Name] {
			return form{kind: cleanForm}
		}
		return form{kind: linearForm, lin: map[string]coef{v.Name: constCoef(1)}}
	case ir.OpDraw: // the input of the joint system (NoiseModel)
		return form{kind: linearForm, lin: map[string]coef{ir.GradName: constCoef(1)}}
	case ir.OpPrivatize: // the clean clipped mean plus w: σ_w scales the input
		return a.sum(v, a.forms[v.Args[0]], a.forms[v.Args[1]])
	case ir.OpF32: // a line value read along the coordinate's row or column
		return a.forms[v.Args[0]]
	case ir.OpStore:
		return a.forms[v.Args[0]]
	case ir.OpNeg:
		return a.scale(a.forms[v.Args[0]], constCoef(-1))
	case ir.OpAdd, ir.OpSub:
		return a.sum(v, a.forms[v.Args[0]], a.forms[v.Args[1]])
	case ir.OpMul:
		return a.product(v, a.forms[v.Args[0]], a.forms[v.Args[1]])
	case ir.OpDiv:
		return a.quotient(v, a.forms[v.Args[0]], a.forms[v.Args[1]])
	case ir.OpSelect:
		if ir.IsFirstStep(v.Args[0]) { // from step 1 on, the select is its third operand
			a.first[v] = true
			return a.forms[v.Args[2]]
		}
	}
	return a.nonlinear(v, nonlinearVerb(v.Op), v.Args...)
}

// readsVariables reports whether a value of args reads the variables,
// linearly or not: a line value does where Recursions takes a state per
// row or column for one, and it is then no coefficient, nor is a value
// that reads it (a sum of it over the lines).
func (a *noiseAnalyzer) readsVariables(args []*ir.Value) bool {
	return a.lineVars && slices.ContainsFunc(args, func(x *ir.Value) bool { k := a.forms[x].kind; return k == linearForm || k == nonlinearForm })
}

// carriesNoise reports whether v reads the noise, from its operands'
// (formOf's order): the draw, a noisy load, a reduction of a noisy term.
func (a *noiseAnalyzer) carriesNoise(v *ir.Value) bool {
	switch {
	case v.Op == ir.OpDraw:
		return true
	case v.Op == ir.OpLoad:
		return a.noisy[v.Name]
	case readsReduction(v) != "":
		return a.noisyTerms[v.Name]
	}
	return slices.ContainsFunc(v.Args, func(x *ir.Value) bool { return a.carries[x] })
}

// nonlinearVerb says what a non-linear operation does to a noisy operand.
func nonlinearVerb(op ir.Op) string {
	switch l := op.Lang(); {
	case l.IsComparison():
		return "compares"
	case l == lang.Select:
		return "selects by or from"
	case l != 0:
		return "applies " + l.String() + " to"
	}
	return "applies " + op.String() + " to"
}

// nonlinear is the form of v when an operand carries noise, and clean
// otherwise.
func (a *noiseAnalyzer) nonlinear(v *ir.Value, verb string, args ...*ir.Value) form {
	for _, x := range args {
		f := a.forms[x]
		switch f.kind {
		case nonlinearForm:
			return f
		case linearForm:
			return a.notLinearAt(v, verb+" a noisy value")
		}
		if f.noisy != nil {
			return a.throughReduction(x)
		}
	}
	return form{kind: cleanForm}
}

func (a *noiseAnalyzer) sum(v *ir.Value, x, y form) form {
	if v.Op == ir.OpSub {
		y = a.scale(y, constCoef(-1))
	}
	switch {
	case x.kind == nonlinearForm:
		return x
	case y.kind == nonlinearForm:
		return y
	case x.noisy != nil || y.noisy != nil: // the noise added through a reduction: an input of its own
		return a.addedInput(x, y)
	case x.kind != linearForm && y.kind != linearForm:
		return form{kind: cleanForm}
	}
	lin := map[string]coef{}
	for _, f := range []form{x, y} {
		for k, c := range f.lin {
			lin[k] = addCoef(coefAt(lin, k), c)
		}
	}
	return form{kind: linearForm, lin: lin}
}

func (a *noiseAnalyzer) product(v *ir.Value, x, y form) form {
	switch {
	case x.kind == uniformForm:
		return a.scale(y, x.c)
	case y.kind == uniformForm:
		return a.scale(x, y.c)
	case x.kind == linearForm && y.kind == linearForm:
		return a.notLinearAt(v, "multiplies two noisy values")
	case x.kind == linearForm || y.kind == linearForm:
		return a.notLinearAt(v, "scales the noise by a per-coordinate value")
	}
	return a.nonlinear(v, "multiplies", v.Args...)
}

func (a *noiseAnalyzer) quotient(v *ir.Value, x, y form) form {
	switch {
	case y.kind == uniformForm && (y.c.moving == "" || y.c.varying) && y.c.f.IsZero():
		return a.nonlinear(v, "divides by zero", v.Args[0])
	case y.kind == uniformForm:
		return a.scale(x, invCoef(y.c))
	case y.kind == linearForm || y.kind == nonlinearForm:
		return a.nonlinear(v, "divides by", v.Args[1])
	case x.kind == linearForm:
		return a.notLinearAt(v, "divides the noise by a per-coordinate value")
	}
	return a.nonlinear(v, "divides", v.Args[0])
}

// scale multiplies a form by a uniform coefficient.
func (a *noiseAnalyzer) scale(f form, c coef) form {
	switch f.kind {
	case uniformForm:
		return form{kind: uniformForm, c: mulCoef(f.c, c), noisy: f.noisy}
	case linearForm:
		lin := map[string]coef{}
		for k, x := range f.lin {
			lin[k] = mulCoef(x, c)
		}
		return form{kind: linearForm, lin: lin, noisy: f.noisy}
	}
	return f
}

// addedInput is the form of x + y where one of them adds the noise through
// a reduction (form.noisy): the linear part of the two, that value kept as
// an input of its own.
func (a *noiseAnalyzer) addedInput(x, y form) form {
	out := form{kind: linearForm, lin: map[string]coef{}, noisy: cmp.Or(x.noisy, y.noisy)}
	for _, f := range []form{x, y} {
		if f.kind == linearForm {
			for k, c := range f.lin {
				out.lin[k] = addCoef(coefAt(out.lin, k), c)
			}
		}
	}
	return out
}

// modelKind says what model returned: the model, one whose coefficients
// change from step to step, or the recursion of a state that a reduction
// adds noise to (StateNoise.Growth).
type modelKind int

const (
	exactModel modelKind = iota
	varyingModel
	growthModel
)

// model builds the state-space model of state s, or says why there is
// none; kind says which model it is, where why names what it lacks.
func (a *noiseAnalyzer) model(s string) (m *Model, why string, kind modelKind) {
	z, why, kind := a.closure(s)
	if why != "" && kind == exactModel {
		return nil, why, exactModel
	}
	m = &Model{State: s, States: z, Target: slices.Index(z, s)}
	for _, zi := range z {
		u := a.updates[zi]
		m.M = append(m.M, row(u, z))
		m.B = append(m.B, coefAt(u.lin, ir.GradName).f)
	}
	return m, why, kind
}

// MaxVaryingStates bounds the states of a time-varying filter that
// attenuation_t follows: the host keeps its covariance, k(k+1)/2 scalars
// of k² terms each.
const MaxVaryingStates = 8

// VaryingNote is what to add to Why for a state whose time-varying filter
// attenuation_t can follow: "" for any other.
func VaryingNote(sn StateNoise) string {
	if sn.Varying == nil || sn.Start != "" || len(sn.Varying.States) > MaxVaryingStates {
		return ""
	}
	return fmt.Sprintf("; the filter over (%s) varies with the step, and attenuation_t(%s) follows its variance exactly", strings.Join(sn.Varying.States, ", "), sn.State)
}

// row is the coefficients of a linear update u on the previous values of
// the states z: a row of M.
func row(u form, z []string) []poly.Frac {
	out := make([]poly.Frac, len(z))
	for j, x := range z {
		out[j] = coefAt(u.lin, x).f
	}
	return out
}

// closure lists the states whose noise reaches s through its update (s
// included) in declaration order, or says why the model does not exist;
// kind reports that the only reason is coefficients that change from step
// to step (varyingModel, the first one quoted in why), which the
// time-varying model gives exactly, or noise that a reduction adds to a
// recursion with fixed coefficients (growthModel), whose growth is checked.
func (a *noiseAnalyzer) closure(s string) (z []string, why string, kind modelKind) {
	if !a.noisy[s] {
		return nil, "the noise never reaches " + s, exactModel
	}
	in := map[string]bool{s: true}
	steps, added := false, false
	for work := []string{s}; len(work) > 0; {
		x := work[len(work)-1]
		work = work[:len(work)-1]
		u := a.updates[x]
		if w, moving := a.notLinear(x, u); w != "" {
			if !moving {
				return nil, w, exactModel
			}
			why, steps = cmp.Or(why, w), true
		}
		if u.kind == linearForm && u.noisy != nil {
			why, added = cmp.Or(why, fmt.Sprintf("in %s, %s %s", a.describe(a.stores[x]), a.describe(u.noisy), throughReductionWhy)), true
		}
		for k, c := range u.lin {
			if k != ir.GradName && !in[k] && (c.moving != "" || !c.f.IsZero()) {
				in[k] = true
				work = append(work, k)
			}
		}
	}
	for _, x := range a.states {
		if in[x] {
			z = append(z, x)
		}
	}
	switch {
	case steps && added:
		return nil, why, exactModel
	case added && a.feedsBack(z):
		return nil, why + "; a reduction reads the recursion's own states, so its growth is not checked either", exactModel
	case steps:
		kind = varyingModel
	case added:
		kind = growthModel
	}
	return z, why, kind
}

// feedsBack reports whether an update of a state of z reads a reduction
// whose term reads a state of z: the recursion then runs through the sum
// over the tensor too (v = rho*v + mean(v)), which the growth model,
// coordinate by coordinate, does not see.
func (a *noiseAnalyzer) feedsBack(z []string) bool {
	loadsZ := func(v *ir.Value) bool { return v.Op == ir.OpLoad && slices.Contains(z, v.Name) }
	viaReduction := func(v *ir.Value) bool {
		t := a.terms[readsReduction(v)]
		return t != nil && readsAny(t, loadsZ)
	}
	return slices.ContainsFunc(z, func(x string) bool { return readsAny(a.stores[x].Args[0], viaReduction) })
}

// readsAny reports whether v or a value it reads is one of which.
func readsAny(v *ir.Value, which func(*ir.Value) bool) bool {
	seen := map[*ir.Value]bool{}
	var visit func(v *ir.Value) bool
	visit = func(v *ir.Value) bool {
		if which(v) {
			return true
		}
		if seen[v] {
			return false
		}
		seen[v] = true
		return slices.ContainsFunc(v.Args, visit)
	}
	return visit(v)
}

// notLinearAt is the form of v, not linear in the noise because v does
// what says.
func (a *noiseAnalyzer) notLinearAt(v *ir.Value, what string) form {
	return form{kind: nonlinearForm, why: a.describe(v) + " " + what, at: v}
}

// origin is the state, first in the step, whose update is not linear for
// the reason of x's update u and whose new value x's update reads: the
// reason then lies in that state's statement. "" if none is, or where x's
// own statement writes the expression the reason is about.
func (a *noiseAnalyzer) origin(x string, u form) string {
	if strings.Contains(a.describe(a.stores[x]), strings.Trim(a.describe(u.at), "`")) {
		return ""
	}
	for _, y := range a.storeOrder {
		if f := a.updates[y]; y != x && f.kind == nonlinearForm && f.at == u.at && readsAny(a.stores[x].Args[0], func(v *ir.Value) bool { return v == a.stores[y].Args[0] }) {
			return y
		}
	}
	return ""
}

// notLinear says why the update of state x does not fit the model, and
// whether the reason is only a coefficient that changes from step to step
// (coef.varying): the first moving one is quoted either way.
func (a *noiseAnalyzer) notLinear(x string, u form) (why string, varying bool) {
	if u.kind == nonlinearForm {
		if y := a.origin(x, u); y != "" {
			return fmt.Sprintf("in %s, through %s's update %s: %s", a.describe(a.stores[x]), y, a.describe(a.stores[y]), u.why), false
		}
		return fmt.Sprintf("in %s, %s", a.describe(a.stores[x]), u.why), false
	}
	varying = true
	for _, k := range sortedKeys(u.lin) {
		if c := u.lin[k]; c.moving != "" {
			why = cmp.Or(why, fmt.Sprintf("in %s, the coefficient of %s %s", a.describe(a.stores[x]), k, c.moving))
			varying = varying && c.varying
		}
	}
	return why, varying
}

func sortedKeys(m map[string]coef) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// coefOf computes the symbolic value of a uniform value; one that grows
// past MaxSymbolicTerms terms becomes a symbol of its own, which keeps the
// algebra small.
func (a *noiseAnalyzer) coefOf(v *ir.Value) coef {
	if a.tooLarge(v) {
		return a.atom(v)
	}
	c := a.coefValue(v)
	if (c.moving == "" || c.varying) && c.f.NumTerms() > MaxSymbolicTerms {
		return a.atom(v)
	}
	return c
}

// lineMoving is why a value per row or per column is no fixed
// coefficient of a filter.
const lineMoving = "reads a value per row or per column, which differs from line to line and depends on the gradient through the sums along them"

// maxCoefDegree bounds the degree of a coefficient's fractions.
const maxCoefDegree = 256

// tooLarge reports whether computing v from its operands' fractions could
// give a degree past maxCoefDegree (the degrees of a product, a quotient or
// a sum of fractions add; x ** n multiplies).
func (a *noiseAnalyzer) tooLarge(v *ir.Value) bool {
	deg := 0
	for _, x := range v.Args {
		c := a.forms[x].c
		deg += max(c.f.Num.Degree(), c.f.Den.Degree(), 0)
	}
	if v.Op == ir.OpPow && len(v.Args) == 2 {
		c := a.forms[v.Args[0]].c
		deg = max(c.f.Num.Degree(), c.f.Den.Degree(), 0) * lang.MaxPowExponent
	}
	return deg > maxCoefDegree
}

func (a *noiseAnalyzer) coefValue(v *ir.Value) coef {
	arg := func(i int) coef { return a.forms[v.Args[i]].c }
	switch v.Op {
	case ir.OpConst:
		return coef{f: poly.FracOf(poly.Const(decimalRat(v.Const)))}
	case ir.OpHyper:
		return a.symbol(v, "hyper "+v.Name)
	case ir.OpStepIndex:
		return a.varyingSymbol(v, "changes from step to step (it reads t)")
	case ir.OpSigmaW2:
		return coef{moving: "changes from step to step (it reads " + v.Op.String() + ")"}
	case ir.OpScalar:
		return a.varyingSymbol(v, "changes from step to step (it reads scalar "+v.Name+")")
	case ir.OpAtten, ir.OpAttenT:
		return coef{moving: "reads " + v.Op.String() + "(" + v.Name + "), which fibergen derives from the filters themselves"}
	case ir.OpReduce, ir.OpReduceMax, ir.OpReduceMin, ir.OpNumel, ir.OpLinesSum, ir.OpLinesMax, ir.OpLinesMin:
		return coef{moving: "reads a norm, sum, mean, max or min over the tensor, which differs from tensor to tensor and (but for the size) depends on the gradient"}
	case ir.OpReduceRows, ir.OpReduceCols, ir.OpRows, ir.OpCols:
		return coef{moving: lineMoving}
	case ir.OpF32:
		return arg(0)
	case ir.OpNeg:
		return mulCoef(arg(0), constCoef(-1))
	case ir.OpAdd:
		return addCoef(arg(0), arg(1))
	case ir.OpSub:
		return addCoef(arg(0), mulCoef(arg(1), constCoef(-1)))
	case ir.OpMul:
		return mulCoef(arg(0), arg(1))
	case ir.OpDiv:
		if d := arg(1); d.moving == "" && !d.f.IsZero() {
			return mulCoef(arg(0), invCoef(d))
		}
	case ir.OpPow:
		if c, ok := a.intPower(v); ok {
			return c
		}
	}
	return a.atom(v)
}

// intPower computes x ** n for a constant integer n of at most
// lang.MaxPowExponent in magnitude.
func (a *noiseAnalyzer) intPower(v *ir.Value) (coef, bool) {
	base, exp := a.forms[v.Args[0]].c, a.forms[v.Args[1]].c
	r, ok := exp.f.Num.Constant()
	if exp.moving != "" || !ok || !exp.f.Den.Equal(poly.Int(1)) || !r.IsInt() || r.Num().CmpAbs(big.NewInt(64)) > 0 {
		return coef{}, false
	}
	n := int(r.Num().Int64())
	if base.moving != "" || n < 0 && base.f.IsZero() {
		return coef{}, false
	}
	p := base.f
	if n < 0 {
		p, _ = poly.FracOf(poly.Int(1)).Div(p)
		n = -n
	}
	out := poly.FracOf(poly.Int(1))
	for range n {
		if out = out.Mul(p); out.NumTerms() > MaxSymbolicTerms {
			return coef{}, false
		}
	}
	return coef{f: out}, true
}

// atom makes a uniform value that is not rational in the symbols a symbol
// of its own, known by its expression, unless it changes from step to step
// other than through t and scalars, or its expression is too large to
// print (then no closed form can name it). One that reads t or scalars is
// a varying symbol.
func (a *noiseAnalyzer) atom(v *ir.Value) coef {
	var moving coef
	for _, x := range v.Args {
		if c := a.forms[x].c; c.moving != "" && (!c.varying || moving.moving == "") {
			moving = c
		}
	}
	if moving.moving != "" && !moving.varying {
		return moving
	}
	if !ir.Printable(v) {
		return coef{moving: fmt.Sprintf("is an expression of more than %d operations, too large to solve for", ir.MaxExprNodes)}
	}
	c := a.symbol(v, ir.ExprString(v))
	if moving.moving != "" {
		c.moving, c.varying = moving.moving, true
	}
	return c
}

// varyingSymbol is the symbol of t or a scalar: a coefficient that moves
// from step to step for the reason moving, but that the symbol names.
func (a *noiseAnalyzer) varyingSymbol(v *ir.Value, moving string) coef {
	c := a.symbol(v, ir.ExprString(v))
	c.moving, c.varying = moving, true
	return c
}

// symbol returns the variable for v, known by key, adding it if new.
func (a *noiseAnalyzer) symbol(v *ir.Value, key string) coef {
	i, ok := a.symIndex[key]
	if !ok {
		i = len(a.symbols)
		a.symIndex[key] = i
		a.symbols = append(a.symbols, v)
	}
	return coef{f: poly.FracOf(poly.Var(i))}
}

// decimalRat is the shortest decimal that rounds to x, as an exact
// rational: 0.9 is 9/10, which is what the source said, rather than the
// binary value nearest to it.
func decimalRat(x float64) *big.Rat {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(x, 'g', -1, 64))
	if !ok {
		return new(big.Rat) // not finite: Check rejects such constants
	}
	return r
}

func constCoef(n int64) coef { return coef{f: poly.FracOf(poly.Int(n))} }

// coefAt is the coefficient of input k in a linear form: zero if absent.
func coefAt(lin map[string]coef, k string) coef {
	if c, ok := lin[k]; ok {
		return c
	}
	return constCoef(0)
}

func addCoef(x, y coef) coef {
	return combine(x, y, x.f.Add)
}

func mulCoef(x, y coef) coef {
	return combine(x, y, x.f.Mul)
}

// combine is op(x.f, y.f), moving if either is; a varying result where
// every moving operand is varying, else moving for the reason of one that
// is not.
func combine(x, y coef, op func(poly.Frac) poly.Frac) coef {
	for _, c := range []coef{x, y} {
		if c.moving != "" && !c.varying {
			return coef{moving: c.moving}
		}
	}
	if m := firstMoving(x, y); m != "" {
		return bounded(coef{f: op(y.f), moving: m, varying: true})
	}
	return bounded(coef{f: op(y.f)})
}

// MaxCoefBits bounds the size of a coefficient in exact arithmetic (its
// coefficients' bit lengths, poly.Frac.Bits): a longer chain of products,
// as 10,000 statements x = x * 1.0001, would cost time quadratic in its
// length. Past it, the coefficient counts as unknown, and an attenuation
// that needs it is an error that says so.
const MaxCoefBits = 4096

func bounded(c coef) coef {
	if (c.moving == "" || c.varying) && c.f.Bits() > MaxCoefBits {
		return coef{moving: fmt.Sprintf("has grown past %d bits of exact arithmetic (a long chain of products)", MaxCoefBits)}
	}
	return c
}

func invCoef(x coef) coef {
	if x.moving != "" && !x.varying {
		return x
	}
	f, err := poly.FracOf(poly.Int(1)).Div(x.f)
	if err != nil {
		return x // zero: the callers check
	}
	return coef{f: f, moving: x.moving, varying: x.varying}
}

func firstMoving(x, y coef) string {
	if x.moving != "" {
		return x.moving
	}
	return y.moving
}
