package lower

import (
	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir"
)

// lowerDiagnostics lowers the file's diagnostic declarations, once the step
// is lowered (l.env holds the value of every name at its end). Each becomes
// a block of its own that recomputes the measured values from the states
// after the step, so the step itself does not change: off, a diagnostic
// costs nothing.
func (l *lowerer) lowerDiagnostics(f *dsl.File, fn *ir.Func) []*ir.Diagnostic {
	var out []*ir.Diagnostic
	for _, d := range f.Diags {
		if dg := l.lowerClampMass(d, fn); dg != nil {
			out = append(out, dg)
		}
	}
	return out
}

// lowerClampMass lowers clamp_mass(mhat, vbar) to a block that stores, per
// coordinate, num = eq(vbar, floor) * |mhat| and den = |mhat|.
func (l *lowerer) lowerClampMass(d *dsl.DiagnosticDecl, fn *ir.Func) *ir.Diagnostic {
	if d.Kind.Name != "clamp_mass" || len(d.Args) != 2 {
		l.fail(d.Kind.NamePos, "cannot lower diagnostic %s", d.Kind.Name)
		return nil
	}
	mhat, vbar := l.env[d.Args[0].Name], l.env[d.Args[1].Name]
	switch {
	case mhat == nil || vbar == nil:
		l.fail(d.Kind.NamePos, "diagnostic %s names a value the step does not bind", d.Kind.Name)
		return nil
	case mhat.Uniform:
		l.errs.Addf(d.Args[0].NamePos, "diagnostic clamp_mass needs %s per-coordinate, but the step gives it a per-step uniform value", d.Args[0].Name)
		return nil
	case vbar.Uniform || vbar.Op != ir.OpMax:
		l.errs.Addf(d.Args[1].NamePos, "diagnostic clamp_mass needs %s per-coordinate, as max(x, floor) with a per-coordinate x", d.Args[1].Name)
		return nil
	}
	c := newDiagCopier(fn, d.Kind.Name)
	m, v, floor := c.copy(mhat), c.copy(vbar), c.copy(vbar.Args[1])
	if c.needs != "" {
		l.errs.Addf(d.Args[c.blameArg(mhat)].NamePos, "clamp_mass needs %s and %s computable from the updated states and the step's scalars, but %s reads %s",
			d.Args[0].Name, d.Args[1].Name, d.Args[c.blameArg(mhat)].Name, c.needs)
		return nil
	}
	abs := c.b.NewValue(ir.OpAbs, ir.F32, false, m)
	num := c.b.NewValue(ir.OpMul, ir.F32, false, c.b.NewValue(ir.OpEq, ir.F32, false, v, floor), abs)
	c.store("num", num)
	c.store("den", abs)
	return &ir.Diagnostic{Kind: d.Kind.Name, Args: []string{d.Args[0].Name, d.Args[1].Name}, Block: c.b}
}

// diagCopier copies the backward slice of step values into a diagnostic
// block, turning each per-coordinate value the step stores into a state
// into a load of that state, which after the step holds exactly that value.
type diagCopier struct {
	b      *ir.Block
	stored map[*ir.Value]string // per-coordinate step value → the state it is stored in
	memo   map[*ir.Value]*ir.Value
	needs  string    // what the slice reads that the states after the step do not give; "" if nothing
	blame  *ir.Value // the root being copied when needs was set
	root   *ir.Value
}

func newDiagCopier(fn *ir.Func, name string) *diagCopier {
	c := &diagCopier{b: &ir.Block{Name: name, Kind: ir.DiagBlock}, stored: map[*ir.Value]string{}, memo: map[*ir.Value]*ir.Value{}}
	for _, st := range fn.Step.Stores() {
		x := st.Args[0]
		if st.Name != "theta" && !x.Uniform && !x.IsLine() && c.stored[x] == "" {
			c.stored[x] = st.Name
		}
	}
	return c
}

// copy returns the diagnostic block's value for the step value v.
func (c *diagCopier) copy(v *ir.Value) *ir.Value {
	if c.root == nil {
		c.root = v
		defer func() { c.root = nil }()
	}
	if nv := c.memo[v]; nv != nil {
		return nv
	}
	var nv *ir.Value
	switch state := c.stored[v]; {
	case state != "":
		nv = c.b.NewValue(ir.OpLoad, ir.F32, false)
		nv.Name = state
	case v.Op == ir.OpLoad || v.IsLine():
		c.missing(v)
		nv = c.b.NewValue(ir.OpConst, ir.F32, true)
	default:
		args := make([]*ir.Value, len(v.Args))
		for i, a := range v.Args {
			args[i] = c.copy(a)
		}
		nv = c.b.NewValue(v.Op, v.Type, v.Uniform, args...)
		nv.Const, nv.Name = v.Const, v.Name
	}
	c.memo[v] = nv
	return nv
}

// missing records a load of the step that the states after it cannot give.
func (c *diagCopier) missing(v *ir.Value) {
	if c.needs != "" {
		return
	}
	c.blame = c.root
	switch {
	case v.IsLine():
		c.needs = "a value " + v.Axis.Per() + ", which the diagnostic's kernel does not read"
		return
	}
	switch v.Name {
	case "g":
		c.needs = "g, the step's privatized gradient"
	case "theta":
		c.needs = "theta from before the step"
	default:
		c.needs = "state " + v.Name + " from before the step"
	}
}

// blameArg is the index of the declared name whose slice needed c.needs.
func (c *diagCopier) blameArg(mhat *ir.Value) int {
	if c.blame == mhat {
		return 0
	}
	return 1
}

func (c *diagCopier) store(name string, v *ir.Value) {
	s := c.b.NewValue(ir.OpStore, ir.None, false, v)
	s.Name = name
}
