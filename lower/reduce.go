package lower

import (
	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
)

// reduction lowers norm(x), sum(x), mean(x), max(x) and min(x) in step: the
// step reads the per-tensor sum of a term (x·x for norm, x else) as an
// OpReduce, or its max or min as an OpReduceMax or OpReduceMin, and the term
// is kept for the reduce block (lowerReduce). norm is the sqrt of its sum
// and mean its sum over the tensor's size, in float64 on the host.
func (l *lowerer) reduction(x *dsl.CallExpr) *ir.Value {
	if len(x.Args) != 1 {
		return l.fail(x.Pos(), "cannot lower call of %s", x.Fun.Name)
	}
	arg := l.expr(x.Args[0])
	if arg.Uniform { // a state assigned a per-step value and read after it
		l.errs.Addf(x.Fun.NamePos, "%s reduces %s, which holds a per-step value here, the same at every coordinate: a reduction is of a per-coordinate value", x.Fun.Name, dsl.ExprString(x.Args[0]))
		return arg
	}
	if arg.IsLine() {
		return l.linesReduction(x, arg)
	}
	l.checkOnePass(x, arg)
	term := arg
	if x.Fun.Name == "norm" {
		term = l.op(ir.OpMul, arg, arg)
	}
	op := ir.OpReduce // norm, sum and mean read a sum; max and min their own
	if c, ok := lang.Calls[x.Fun.Name]; ok {
		op = ir.ReduceOf(c)
	}
	r := l.b.NewValue(op, ir.F64, true)
	r.Name = ir.ReduceTerm(len(l.terms))
	l.terms = append(l.terms, term)
	switch x.Fun.Name {
	case "norm":
		return l.op(ir.OpSqrt, r)
	case "mean":
		return l.op(ir.OpDiv, r, l.b.NewValue(ir.OpNumel, ir.F64, true))
	}
	return r
}

// lowerReduce builds the reduce block from the terms the step's
// reductions sum: a copy of each term's backward slice, whose loads read
// the buffers before the step as the step's do; nil without reductions.
func (l *lowerer) lowerReduce(fn *ir.Func) *ir.Block {
	if len(l.terms) == 0 {
		return nil
	}
	b := &ir.Block{Name: "reduce", Kind: ir.ReduceBlock}
	copied := map[*ir.Value]*ir.Value{}
	var cp func(v *ir.Value) *ir.Value
	cp = func(v *ir.Value) *ir.Value {
		if nv := copied[v]; nv != nil {
			return nv
		}
		args := make([]*ir.Value, len(v.Args))
		for i, a := range v.Args {
			args[i] = cp(a)
		}
		nv := b.NewValue(v.Op, v.Type, v.Uniform, args...)
		nv.Const, nv.Name = v.Const, v.Name
		copied[v] = nv
		return nv
	}
	for i, t := range l.terms {
		st := b.NewValue(ir.OpStore, ir.None, false, cp(t))
		st.Name = ir.ReduceTerm(i)
	}
	return b
}
