package lower

import (
	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
)

// Lines: states per row and per column and the row and column reductions
// (docs/dsl.md, "Rows and columns"; ir/lines.go).

// lowerStates lists f's states in fn: those per coordinate in States
// (with their storage), those per row or column in LineStates.
func lowerStates(fn *ir.Func, f *dsl.File) {
	for _, s := range f.States {
		if s.Axis != nil {
			fn.LineStates = append(fn.LineStates, ir.LineState{Name: s.Name.Name, Axis: lang.AxisWords[s.Axis.Name]})
			continue
		}
		fn.States = append(fn.States, s.Name.Name)
		lowerStorage(fn, s)
	}
}

// storeLine stores v, a value per line of the state's axis or a uniform
// one, in line state s: on the host, in float64, as the state's new value.
func (l *lowerer) storeLine(a *dsl.AssignStmt, s *ir.LineState, v *ir.Value) *ir.Value {
	if v.Type != ir.F64 || v.IsLine() && v.Axis != s.Axis {
		return l.fail(a.RHS.Pos(), "state %s is %s, but its value is not", s.Name, s.Axis.Per())
	}
	st := l.store(s.Name, v)
	st.Axis = s.Axis
	return st
}

// linesReduction lowers norm(x), sum(x), mean(x), max(x) and min(x) of x, a
// value per line: on the host, in float64, over the tensor's lines in
// order; mean divides by their number.
func (l *lowerer) linesReduction(x *dsl.CallExpr, arg *ir.Value) *ir.Value {
	over := func(c lang.Op, v *ir.Value) *ir.Value { return l.b.NewValue(ir.LinesOf(c), ir.F64, true, v) }
	switch x.Fun.Name {
	case "norm":
		return l.op(ir.OpSqrt, over(lang.Add, l.op(ir.OpMul, arg, arg)))
	case "sum":
		return over(lang.Add, arg)
	case "mean":
		return l.op(ir.OpDiv, over(lang.Add, arg), l.lineCount(arg.Axis))
	}
	return over(lang.Calls[x.Fun.Name], arg)
}

// lineCount is the number of lines along axis: the tensor's rows for
// lang.Rows, its columns for lang.Cols.
func (l *lowerer) lineCount(axis lang.Axis) *ir.Value {
	return l.b.NewValue(ir.LineCountOf(axis), ir.F64, true)
}

// lineReduction lowers rowsum(x), rowmean(x), colsum(x) and colmean(x): the
// step reads the sums of the term x along each row (column) as an
// OpReduceRows (OpReduceCols), a line value, and the term is kept for the
// reduce block as a per-tensor sum's is; a mean divides by the line's
// length, on the host.
func (l *lowerer) lineReduction(x *dsl.CallExpr, axis lang.Axis) *ir.Value {
	if len(x.Args) != 1 {
		return l.fail(x.Pos(), "cannot lower call of %s", x.Fun.Name)
	}
	arg := l.expr(x.Args[0])
	if arg.Uniform || arg.IsLine() { // a state assigned a per-step (per-line) value and read after it
		l.errs.Addf(x.Fun.NamePos, "%s reduces %s, which holds a value %s here: a row or column reduction is of a per-coordinate value", x.Fun.Name, dsl.ExprString(x.Args[0]), map[bool]string{true: "per step", false: arg.Axis.Per()}[arg.Uniform])
		return l.constant(0)
	}
	l.checkOnePass(x, arg)
	r := l.b.NewValue(ir.LineReduceOf(axis), ir.F64, false)
	r.Name, r.Axis = ir.ReduceTerm(len(l.terms)), axis
	l.terms = append(l.terms, arg)
	if x.Fun.Name == "rowmean" || x.Fun.Name == "colmean" {
		across := map[lang.Axis]lang.Axis{lang.Rows: lang.Cols, lang.Cols: lang.Rows}[axis]
		return l.op(ir.OpDiv, r, l.lineCount(across))
	}
	return r
}

// checkOnePass reports a reduction x of arg, a value that reads another
// reduction or a line value: fibergen runs one reduction pass before the
// step, and the pass does not read line values yet.
func (l *lowerer) checkOnePass(x *dsl.CallExpr, arg *ir.Value) {
	what := ""
	switch {
	case ir.ReadsLineReduction(arg):
		what = "a rowsum, rowmean, colsum or colmean"
	case ir.ReadsLine(arg):
		l.errs.Addf(x.Fun.NamePos, "%s reduces %s, which reads a value per row or column: the reduction pass does not read them yet (docs/dsl.md, \"Rows and columns\")", x.Fun.Name, dsl.ExprString(x.Args[0]))
		return
	case ir.ReadsReduction(arg):
		what = "a norm, sum, mean, max or min"
	default:
		return
	}
	l.errs.Addf(x.Fun.NamePos, "%s reduces %s, which reads %s: fibergen runs one reduction pass before the step, so a reduction cannot read another", x.Fun.Name, dsl.ExprString(x.Args[0]), what)
}
