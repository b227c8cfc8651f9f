package dsl

import (
	"sort"
	"strings"

	"github.com/fibergen/fibergen/lang"
)

// DiagnosticKinds lists the diagnostics and the roles of their arguments.
// clamp_mass(mhat, vbar) is the share of the update's magnitude on the
// coordinates whose floored second moment vbar = max(x, floor) sits on its
// floor: Σ 1[vbar = floor]·|mhat| / Σ |mhat| (the FiBeR paper, Appendix E).
var DiagnosticKinds = map[string][]string{
	"clamp_mass": {"the first moment", "the floored second moment"},
}

// diagnosticNames lists the known diagnostics, sorted, for messages.
func diagnosticNames() string {
	var names []string
	for k := range DiagnosticKinds {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// checkDiagnostics checks the diagnostic declarations against the step:
// a known kind, declared once, naming step locals or states of the right
// kind. defs maps each name the step binds or assigns to its statement.
func (c *checker) checkDiagnostics(defs map[string]*AssignStmt) {
	seen := map[string]*DiagnosticDecl{}
	live := c.updateInputs(defs)
	for _, d := range c.f.Diags {
		if d.Kind.Name == "" {
			continue // reported by the parser
		}
		roles, ok := DiagnosticKinds[d.Kind.Name]
		switch {
		case !ok:
			c.errorf(d.Kind.NamePos, "unknown diagnostic %s (known: %s)", d.Kind.Name, diagnosticNames())
			continue
		case len(d.Args) != len(roles):
			c.errorf(d.Kind.NamePos, "diagnostic %s takes %d names (%s), got %d", d.Kind.Name, len(roles), strings.Join(roles, " and "), len(d.Args))
			continue
		case seen[d.Kind.Name] != nil:
			c.errorf(d.Kind.NamePos, "duplicate diagnostic %s (first at %s)", d.Kind.Name, seen[d.Kind.Name].Keyword.LineCol())
			continue
		}
		seen[d.Kind.Name] = d
		for i, id := range d.Args {
			c.diagnosticArg(d, id, roles[i], live)
		}
		if len(d.Args) == 2 {
			c.checkFloored(d, d.Args[1], defs)
		}
	}
}

// diagnosticArg checks that id names a per-coordinate local or state of
// step; a local must feed the update (live), or the diagnostic would
// measure something the step does not do.
func (c *checker) diagnosticArg(d *DiagnosticDecl, id *Ident, role string, live map[string]bool) {
	obj := c.names[id.Name]
	switch {
	case id.Name == "":
		return // reported by the parser
	case universe[id.Name] != nil:
		c.errorf(id.NamePos, "diagnostic %s needs %s as a local or state of step, not the built-in %s", d.Kind.Name, role, id.Name)
		return
	case obj == nil:
		c.undefined(id)
		return
	case obj.Kind != LocalObj && obj.Kind != StateObj:
		c.errorf(id.NamePos, "diagnostic %s needs %s as a local or state of step, not the %s %s", d.Kind.Name, role, kindName(obj.Kind), id.Name)
		return
	case obj.Kind == LocalObj && !obj.Varying:
		c.errorf(id.NamePos, "diagnostic %s needs %s per-coordinate, but %s is per-step uniform", d.Kind.Name, role, id.Name)
	case obj.Axis != lang.Coords:
		c.errorf(id.NamePos, "diagnostic %s needs %s per-coordinate, but %s is %s", d.Kind.Name, role, id.Name, obj.Axis.Per())
	case obj.Kind == LocalObj && !live[id.Name]:
		c.errorf(id.NamePos, "diagnostic %s measures the update, but %s feeds neither theta nor any state", d.Kind.Name, id.Name)
	}
	c.info.Uses[id] = obj
	if obj.Kind == LocalObj {
		obj.uses++
	}
}

// checkFloored checks that id is defined in step as max(x, floor) with a
// per-coordinate x, the clamp that the diagnostic detects. The floor may be
// per-step uniform (eps_v) or per-coordinate (rho * vhat); a uniform first
// argument with a per-coordinate second is the floor written first, which
// would make the diagnostic measure the unclamped coordinates.
func (c *checker) checkFloored(d *DiagnosticDecl, id *Ident, defs map[string]*AssignStmt) {
	a := defs[id.Name]
	if a == nil || c.info.Uses[id] == nil {
		return // not a local or state of step: reported above or by checkUpdated
	}
	call, ok := Unparen(a.RHS).(*CallExpr)
	if ok && call.Fun.Name == "max" && len(call.Args) == 2 && (c.isVarying(call.Args[0]) || !c.isVarying(call.Args[1])) {
		return
	}
	c.errorf(id.NamePos, "diagnostic %s needs %s defined as max(x, floor) with a per-coordinate x, but %s is `%s` (line %d)",
		d.Kind.Name, id.Name, id.Name, ExprString(a.RHS), a.LHS.NamePos.Line)
}

// updateInputs returns the locals that the updates of theta and the states
// read, directly or through other locals; defs maps each name the step
// binds or assigns to its statement.
func (c *checker) updateInputs(defs map[string]*AssignStmt) map[string]bool {
	live := map[string]bool{}
	var visit func(x Expr)
	visit = func(x Expr) {
		Inspect(x, func(e Expr) bool {
			id, ok := e.(*Ident)
			if !ok {
				return true
			}
			if obj := c.names[id.Name]; obj != nil && obj.Kind == LocalObj && !live[id.Name] {
				live[id.Name] = true
				if a := defs[id.Name]; a != nil {
					visit(a.RHS)
				}
			}
			return true
		})
	}
	for _, a := range c.f.Step.Body {
		if obj := c.names[a.LHS.Name]; a.LHS.Name == "theta" || obj != nil && obj.Kind == StateObj {
			visit(a.RHS)
		}
	}
	return live
}
