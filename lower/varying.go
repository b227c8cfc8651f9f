package lower

import (
	"fmt"
	"slices"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/noise"
	"github.com/fibergen/fibergen/ir/poly"
)

// Time-varying filters (docs/dsl.md, "Noise attenuation"): a state whose
// filter's coefficients read t or scalars has no steady attenuation, but
// its finite-time one is exact: from a zero state, the covariance of the
// noise over the model's states follows
//
//	Σ_t = M_t Σ_{t−1} M_tᵀ + b_t b_tᵀ,   Σ_{−1} = 0,
//
// and attenuation_t(s) is Σ_t[s][s]. That is a recursion over t of uniform
// values, which is what scalars are: the entries of Σ become scalars,
// updated after the host block from the coefficients at step t, so every
// target computes them in float64 as it computes the user's scalars, a
// checkpoint restores them from t and the hypers, and explain prints them.

// followVarying lowers attenuation_t(s) of the time-varying filter of
// sn: v becomes a read of the scalar that holds Σ_t[s][s].
func (l *lowerer) followVarying(fn *ir.Func, v *ir.Value, sn *noise.StateNoise, call *dsl.CallExpr) {
	if sn.Start != "" {
		l.errs.Addf(call.Pos(), "attenuation_t(%s): the filter starts otherwise at step 0, at %s; the finite-time gain is derived "+
			"for filters that start from their buffers", sn.State, sn.Start)
		return
	}
	if k := len(sn.Varying.States); k > noise.MaxVaryingStates {
		l.errs.Addf(call.Pos(), "attenuation_t(%s): its filter varies with the step and has %d states; the host follows its "+
			"covariance, k(k+1)/2 scalars of k² terms each, for at most %d", sn.State, k, noise.MaxVaryingStates)
		return
	}
	name := CovarianceScalar(sn.State, "", "")
	if !slices.Contains(fn.Scalars, name) {
		l.covarianceScalars(fn, sn.Varying)
	}
	v.Op, v.Args, v.Name = ir.OpScalar, nil, name
}

// CovarianceScalar names the scalar that holds Σ[zi][zj] of state s's
// time-varying filter: attenuation_t(s) for the target's own variance
// (zi = zj = ""), else attenuation_t(s)[zi,zj].
func CovarianceScalar(s, zi, zj string) string {
	if zi == "" {
		return "attenuation_t(" + s + ")"
	}
	return fmt.Sprintf("attenuation_t(%s)[%s,%s]", s, zi, zj)
}

// covarianceScalars adds the scalars of m's covariance, Σ[i][j] for
// i ≤ j, starting at 0, and their update after the host block.
func (l *lowerer) covarianceScalars(fn *ir.Func, m *noise.Model) {
	if fn.ScalarInit == nil {
		fn.ScalarInit = &ir.Block{Name: "scalar init", Kind: ir.ScalarInitBlock}
		fn.ScalarStep = &ir.Block{Name: "scalar step", Kind: ir.ScalarStepBlock}
	}
	k := len(m.States)
	names := make([][]string, k)
	for i := range k {
		names[i] = make([]string, k)
		for j := range k {
			names[i][j] = CovarianceScalar(m.State, m.States[min(i, j)], m.States[max(i, j)])
			if i == m.Target && j == m.Target {
				names[i][j] = CovarianceScalar(m.State, "", "")
			}
		}
	}
	step := l.b
	defer func() { l.b = step }()
	l.b = fn.ScalarStep
	mt, bt := l.hostMatrix(fn, m.M), l.hostMatrix(fn, [][]poly.Frac{m.B})[0]
	prev := func(i, j int) *ir.Value {
		v := l.b.NewValue(ir.OpScalar, ir.F64, true)
		v.Name = names[i][j]
		return v
	}
	for i := range k {
		for j := i; j < k; j++ {
			fn.Scalars = append(fn.Scalars, names[i][j])
			fn.ScalarInit.NewValue(ir.OpStore, ir.None, true, fn.ScalarInit.NewValue(ir.OpConst, ir.F64, true)).Name = names[i][j]
			l.store(names[i][j], l.covarianceEntry(mt, bt, prev, i, j))
		}
	}
}

// covarianceEntry is (M Σ Mᵀ + b bᵀ)[i][j], leaving out the zero
// coefficients (nil in mt and bt).
func (l *lowerer) covarianceEntry(mt [][]*ir.Value, bt []*ir.Value, prev func(i, j int) *ir.Value, i, j int) *ir.Value {
	var sum *ir.Value
	add := func(x *ir.Value) {
		if sum == nil {
			sum = x
		} else {
			sum = l.op(ir.OpAdd, sum, x)
		}
	}
	for p := range mt[i] {
		for q := range mt[j] {
			if mt[i][p] != nil && mt[j][q] != nil {
				add(l.op(ir.OpMul, l.op(ir.OpMul, mt[i][p], prev(min(p, q), max(p, q))), mt[j][q]))
			}
		}
	}
	if bt[i] != nil && bt[j] != nil {
		add(l.op(ir.OpMul, bt[i], bt[j]))
	}
	if sum == nil {
		return l.constant(0)
	}
	return sum
}

// hostMatrix lowers fractions of the noise analysis's symbols into the
// scalar step block, after the host block: hypers, t, and each scalar's
// value at this step; nil for a zero fraction.
func (l *lowerer) hostMatrix(fn *ir.Func, rows [][]poly.Frac) [][]*ir.Value {
	out := make([][]*ir.Value, len(rows))
	for i, r := range rows {
		out[i] = make([]*ir.Value, len(r))
		for j, f := range r {
			if !f.IsZero() {
				out[i][j] = l.lowerAfterHost(fn, FracExpr(f, l.noise.Symbols))
			}
		}
	}
	return out
}

// lowerAfterHost lowers x, an expression of hypers, t and scalars, into
// the scalar step block with every scalar at its new value.
func (l *lowerer) lowerAfterHost(fn *ir.Func, x dsl.Expr) *ir.Value {
	info := &dsl.Info{Uses: map[*dsl.Ident]*dsl.Object{}}
	env := map[string]*ir.Value{}
	dsl.Inspect(x, func(e dsl.Expr) bool {
		id, ok := e.(*dsl.Ident)
		switch {
		case !ok:
		case slices.Contains(fn.Scalars, id.Name):
			env[id.Name] = l.scalarsAfter[id.Name]
		case id.Name == "t":
			info.Uses[id] = &dsl.Object{Kind: dsl.BuiltinObj, Name: "t"}
		default:
			info.Uses[id] = &dsl.Object{Kind: dsl.HyperObj, Name: id.Name}
		}
		return true
	})
	sub := &lowerer{info: info, b: l.b, env: env}
	v := sub.expr(x)
	if l.err == nil {
		l.err = sub.err
	}
	return v
}
