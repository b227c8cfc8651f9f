package dsl

import (
	"slices"
	"strings"

	"github.com/fibergen/fibergen/lang"
)

// ObserveKinds lists the observation kinds and their arguments.
var ObserveKinds = map[string][]string{
	"two_point": {"a", "lookahead"},
}

func (c *checker) checkObserve() {
	d := c.f.Observe
	if d == nil || d.Kind.Name == "" {
		return
	}
	params, ok := ObserveKinds[d.Kind.Name]
	if !ok {
		c.errorf(d.Kind.NamePos, "unknown observation kind %s (known: two_point)", d.Kind.Name)
		return
	}
	seen := map[string]bool{}
	for _, a := range d.Args {
		c.observeArg(d, a, params, seen)
	}
	for _, p := range params {
		if !seen[p] {
			c.errorf(d.Kind.NamePos, "observe %s needs the argument %s", d.Kind.Name, p)
		}
	}
	c.reserveLookahead(d)
}

// reserveLookahead rejects a declared state named lang.LookaheadState in a
// two_point optimizer, whose step writes the look-ahead point there.
func (c *checker) reserveLookahead(d *ObserveDecl) {
	if d.Kind.Name != "two_point" {
		return
	}
	for _, s := range c.f.States {
		if s.Name.Name == lang.LookaheadState {
			c.errorf(s.Name.NamePos, "state %s: observe two_point writes the next look-ahead point into a state of this name (declared at %s); rename this state", lang.LookaheadState, d.Keyword.LineCol())
		}
	}
}

func (c *checker) observeArg(d *ObserveDecl, a *Arg, params []string, seen map[string]bool) {
	name := a.Name.Name
	switch {
	case name == "": // reported by the parser
	case !slices.Contains(params, name):
		c.errorf(a.Name.NamePos, "observe %s has no argument %s (it takes %s)", d.Kind.Name, name, strings.Join(params, " and "))
	case seen[name]:
		c.errorf(a.Name.NamePos, "argument %s given twice", name)
	}
	seen[name] = true
	c.expr(a.Value, &scope{where: "observe argument " + name, observe: true})
}

func (c *checker) checkStep() {
	d := c.f.Step
	if d == nil {
		c.errorf(c.endPos(), "missing step { ... } block")
		return
	}
	s := &scope{where: "step", bound: map[string]bool{}, later: map[string]*AssignStmt{}, usedEarly: map[string]bool{}}
	for _, a := range d.Body {
		if c.names[a.LHS.Name] == nil && universe[a.LHS.Name] == nil && s.later[a.LHS.Name] == nil {
			s.later[a.LHS.Name] = a
		}
	}
	assigned := map[*Object]*AssignStmt{}
	defs := map[string]*AssignStmt{}
	for _, a := range d.Body {
		v := c.expr(a.RHS, s)
		c.assign(a, v, s, assigned)
		c.checkAxis(a, v)
		if defs[a.LHS.Name] == nil {
			defs[a.LHS.Name] = a
		}
	}
	c.checkDiagnostics(defs)
	if !c.partial {
		c.checkUpdated(d, assigned)
	}
}

// checkHost checks the step's host block: uniform statements that update
// each scalar once or bind host locals, read by the host block only.
func (c *checker) checkHost() {
	d := c.f.Step
	if d == nil {
		return
	}
	s := &scope{where: "the host block", host: true, bound: map[string]bool{}, later: map[string]*AssignStmt{}, usedEarly: map[string]bool{}}
	assigned := map[*Object]*AssignStmt{}
	for _, a := range d.Host {
		v := c.expr(a.RHS, s)
		if obj := c.names[a.LHS.Name]; obj != nil && obj.Kind == StateObj {
			c.errorf(a.LHS.NamePos, "the host block updates scalars and binds locals; state %s is %s: update it in step", a.LHS.Name, obj.Axis.Per())
			continue
		}
		c.assign(a, v, s, assigned)
	}
	if c.partial {
		return
	}
	for _, sc := range c.info.Scalars {
		if assigned[sc] == nil {
			c.errorf(sc.Pos, "scalar %s is never updated in the host block (host { %s = ... } first in step)", sc.Name, sc.Name)
		}
	}
}

// assign checks the target of one statement, whose value is v, and binds
// a new local.
func (c *checker) assign(a *AssignStmt, v value, s *scope, assigned map[*Object]*AssignStmt) {
	id := a.LHS
	obj := noiseName(id.Name, s)
	if obj == nil {
		obj = universe[id.Name]
	}
	if obj == nil {
		obj = c.names[id.Name]
	}
	switch {
	case id.Name == "_":
		c.errorf(id.NamePos, "cannot assign to _: the blank name names nothing (bind a local and use it)")
		return
	case obj == nil:
		obj = &Object{Kind: LocalObj, Name: id.Name, Pos: id.NamePos, Varying: v.varying, Axis: v.axis, Host: s.host, Noise: s.noise}
		c.names[id.Name] = obj
		if s.usedEarly[id.Name] {
			obj.uses++
		}
		c.info.Locals = append(c.info.Locals, obj)
		delete(s.later, id.Name)
		s.bound[id.Name] = true
	case !c.assignable(id, obj, s):
		return
	case assigned[obj] != nil:
		c.errorf(id.NamePos, "%s %s is assigned twice in %s (first at %s)", kindName(obj.Kind), id.Name, blockName(s), assigned[obj].LHS.NamePos.LineCol())
		return
	}
	assigned[obj] = a
	c.info.Defs[a] = obj
}

// checkAxis reports a statement of step that assigns a state per row or
// per column a value that is not: one per coordinate, or one along the
// other axis. A state per coordinate takes any value, broadcast.
func (c *checker) checkAxis(a *AssignStmt, v value) {
	obj := c.info.Defs[a]
	if obj == nil || obj.Kind != StateObj || obj.Axis == lang.Coords || !v.varying || v.axis == obj.Axis {
		return
	}
	hint := ""
	if v.axis == lang.Coords && c.readsAxis(a.RHS, lang.Rows) && c.readsAxis(a.RHS, lang.Cols) {
		hint = " (a value per row with one per column is per coordinate)"
	}
	c.errorf(a.RHS.Pos(), "state %s is %s, but `%s` is %s%s: a state per row takes values per row (rowsum, rowmean, states per row) and per-step uniform ones; per column likewise", obj.Name, obj.Axis.Per(), ExprString(a.RHS), v.axis.Per(), hint)
}

// readsAxis reports whether the checked expression x reads a name or a
// row or column reduction along axis.
func (c *checker) readsAxis(x Expr, axis lang.Axis) bool {
	found := false
	Inspect(x, func(e Expr) bool {
		switch e := e.(type) {
		case *Ident:
			found = found || c.info.Uses[e] != nil && c.info.Uses[e].Varying && c.info.Uses[e].Axis == axis
		case *CallExpr:
			found = found || lang.LineReductions[e.Fun.Name] == axis && axis != lang.Coords
		}
		return !found
	})
	return found
}

// blockName names the block of scope s in a message.
func blockName(s *scope) string {
	switch {
	case s.noise:
		return "the noise block"
	case s.host:
		return "the host block"
	}
	return "step"
}

// assignable reports whether obj may be the target of an assignment.
func (c *checker) assignable(id *Ident, obj *Object, s *scope) bool {
	switch {
	case s.noise:
		return c.noiseAssignable(id, obj)
	case obj.Kind == BufferObj:
		c.errorf(id.NamePos, "noise buffer %s is updated in the noise block, not in %s", id.Name, s.where)
	case s.host && obj.Kind == ScalarObj:
		return true
	case obj.Kind == ScalarObj:
		c.errorf(id.NamePos, "scalar %s is updated in the host block, once per step, not per coordinate in step", id.Name)
	case s.host && obj.Name == "theta":
		c.errorf(id.NamePos, "the host block updates scalars and binds locals; theta is per coordinate: update it in step")
	case obj.Kind == StateObj || obj.Name == "theta":
		return true
	case obj.Kind == HyperObj:
		c.errorf(id.NamePos, "cannot assign to hyper %s: hypers are constant during training", id.Name)
	case obj.Kind == LocalObj:
		c.errorf(id.NamePos, "local %s is already bound at %s; a local is bound once (use a new name)", id.Name, obj.Pos.LineCol())
	case obj.Kind == FuncObj:
		c.errorf(id.NamePos, "cannot assign to function %s", id.Name)
	default:
		c.errorf(id.NamePos, "cannot assign to built-in %s: %s", id.Name, builtinRole[id.Name])
	}
	return false
}

var builtinRole = map[string]string{
	"g":        "it is the privatized gradient, an input of the step",
	"t":        "it is the step index, counted by the runtime",
	"sigma_w2": "it is the DP noise variance, set by the runtime",
}

// isVarying reports whether an already checked expression is per-coordinate;
// attenuation(s) and attenuation_t(s) are uniform, whatever s is.
func (c *checker) isVarying(x Expr) bool {
	varying := false
	Inspect(x, func(e Expr) bool {
		if id, ok := e.(*Ident); ok && c.info.Uses[id] != nil && c.info.Uses[id].Varying {
			varying = true
		}
		if call, ok := e.(*CallExpr); ok && IsAttenuation(call.Fun.Name) {
			return false
		}
		return !varying
	})
	return varying
}

// checkUpdated reports states and theta that step never assigns and locals
// that are never read.
func (c *checker) checkUpdated(d *StepDecl, assigned map[*Object]*AssignStmt) {
	for _, st := range c.info.States {
		if assigned[st] == nil {
			c.errorf(st.Pos, "state %s is never updated in step", st.Name)
		}
	}
	if assigned[universe["theta"]] == nil {
		c.errorf(d.Keyword, "step never updates theta")
	}
	for _, l := range c.info.Locals {
		if l.uses == 0 && !c.hasErrorOnLine(l.Pos) {
			c.errorf(l.Pos, "local %s is bound but never used", l.Name)
		}
	}
}

// hasErrorOnLine reports whether an error is already reported on pos's
// line; "never used" is then left out, as the line's other error matters more.
func (c *checker) hasErrorOnLine(pos Pos) bool {
	for _, e := range c.errs {
		if e.Pos.Line == pos.Line && e.Pos.Filename == pos.Filename {
			return true
		}
	}
	return false
}

// endPos is the position just past the last byte of the file.
func (c *checker) endPos() Pos {
	src, line, col := c.f.Src, 1, 1
	for _, b := range src {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return Pos{Filename: c.f.Filename, Offset: len(src), Line: line, Column: col}
}
