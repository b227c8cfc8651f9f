package lower

import (
	"fmt"
	"slices"
	"strings"

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
// sn: v becomes a read of the scalar that holds Σ_t[s][s] (in the host
// block, of its value at the step before, which advanceHostReads
// advances). It reports whether it did.
func (l *lowerer) followVarying(fn *ir.Func, v *ir.Value, sn *noise.StateNoise, call *dsl.CallExpr) bool {
	if sn.Start != "" {
		l.errs.Addf(call.Pos(), "attenuation_t(%s): the filter starts otherwise at step 0, at %s; the finite-time gain is derived "+
			"for filters that start from their buffers", sn.State, sn.Start)
		return false
	}
	if k := len(sn.Varying.States); k > noise.MaxVaryingStates {
		l.errs.Addf(call.Pos(), "attenuation_t(%s): its filter varies with the step and has %d states; the host follows its "+
			"covariance, k(k+1)/2 scalars of k² terms each, for at most %d", sn.State, k, noise.MaxVaryingStates)
		return false
	}
	v.Op, v.Args, v.Name = ir.OpScalar, nil, l.covarianceOf(fn, sn)
	return true
}

// covarianceOf names the scalar that holds Σ_t[s][s] of state s's
// time-varying filter, adding the filter's covariance scalars on its first
// use: a state whose filter is over the same states as one followed
// already (an alpha-beta tracker's l and s) reads that one's.
func (l *lowerer) covarianceOf(fn *ir.Func, sn *noise.StateNoise) string {
	key := statesKey(sn.Varying.States)
	owner, ok := l.covariances[key]
	if !ok {
		owner, l.covariances[key] = sn.State, sn.State
		l.covarianceScalars(fn, sn.Varying)
	}
	if owner == sn.State {
		return CovarianceScalar(sn.State, "", "")
	}
	return CovarianceScalar(owner, sn.State, sn.State)
}

// statesKey names a filter by its set of states, whatever their order.
func statesKey(states []string) string {
	return strings.Join(slices.Sorted(slices.Values(states)), ",")
}

// advanceHostReads makes each read of a covariance scalar in the host
// block (reads) read its value at this step, Σ_t, as attenuation_t(s)
// does in step: the reads use the value the block stores, and the block
// is put in an order that computes it first. Σ_t reads the scalars that
// the filter's coefficients read at their values at this step, so a
// scalar computed from attenuation_t(s) of its own filter is a cycle, an
// error at the call.
func (l *lowerer) advanceHostReads(fn *ir.Func, reads []*ir.Value) {
	if len(reads) == 0 {
		return
	}
	stored := map[string]*ir.Value{}
	for _, st := range fn.ScalarStep.Stores() {
		stored[st.Name] = st.Args[0]
	}
	next := map[*ir.Value]*ir.Value{}
	for _, v := range reads {
		next[v] = stored[v.Name]
	}
	b := fn.ScalarStep
	b.Values = slices.DeleteFunc(b.Values, func(v *ir.Value) bool { return next[v] != nil })
	for _, v := range b.Values {
		for i, a := range v.Args {
			if n := next[a]; n != nil {
				v.Args[i] = n
			}
		}
	}
	cycle := sortBlock(b)
	for _, v := range reads {
		if cycle[next[v]] {
			call := l.attens[v]
			l.errs.Addf(call.Pos(), "attenuation_t(%s) in the host block is its value at this step, from its filter's coefficients "+
				"at this step, which read a scalar computed from it: a cycle (a scalar assigned after reading it reads the value at the step before)", dsl.ExprString(call.Args[0]))
			return
		}
	}
}

// sortBlock orders b's values so that each comes after its operands,
// keeping the order it had where it can; a cycle leaves b as it was and
// returns the values on it.
func sortBlock(b *ir.Block) map[*ir.Value]bool {
	const (
		visiting = 1
		done     = 2
	)
	mark := map[*ir.Value]int{}
	var order []*ir.Value
	var cycle map[*ir.Value]bool
	var path []*ir.Value
	var visit func(v *ir.Value)
	visit = func(v *ir.Value) {
		switch {
		case cycle != nil || mark[v] == done:
			return
		case mark[v] == visiting:
			cycle = map[*ir.Value]bool{}
			for _, p := range path[slices.Index(path, v):] {
				cycle[p] = true
			}
			return
		}
		mark[v] = visiting
		path = append(path, v)
		for _, a := range v.Args {
			visit(a)
		}
		path = path[:len(path)-1]
		mark[v] = done
		order = append(order, v)
	}
	for _, v := range b.Values {
		visit(v)
	}
	if cycle == nil {
		b.Values = order
	}
	return cycle
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
	step := l.b
	defer func() { l.b = step }()
	l.b = fn.ScalarStep
	k := len(m.States)
	prev := make([][]*ir.Value, k) // Σ_{t−1}: the scalars' values at the step before
	for i := range k {
		prev[i] = make([]*ir.Value, k)
	}
	for i := range k {
		for j := i; j < k; j++ {
			name := CovarianceScalar(m.State, m.States[i], m.States[j])
			if i == m.Target && j == m.Target {
				name = CovarianceScalar(m.State, "", "")
			}
			prev[i][j] = l.b.NewValue(ir.OpScalar, ir.F64, true)
			prev[i][j].Name, prev[j][i] = name, prev[i][j]
		}
	}
	mt, bt := l.hostMatrix(m.M), l.hostMatrix([][]poly.Frac{m.B})[0]
	for i := range k {
		for j := i; j < k; j++ {
			name := prev[i][j].Name
			fn.Scalars = append(fn.Scalars, name)
			fn.ScalarInit.NewValue(ir.OpStore, ir.None, true, fn.ScalarInit.NewValue(ir.OpConst, ir.F64, true)).Name = name
			l.store(name, l.covarianceEntry(mt, prev, bt, i, j))
		}
	}
}

// covarianceEntry is (M Σ Mᵀ + b bᵀ)[i][j], leaving out the zero
// coefficients (nil in mt and bt).
func (l *lowerer) covarianceEntry(mt, prev [][]*ir.Value, bt []*ir.Value, i, j int) *ir.Value {
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
				add(l.op(ir.OpMul, l.op(ir.OpMul, mt[i][p], prev[p][q]), mt[j][q]))
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
func (l *lowerer) hostMatrix(rows [][]poly.Frac) [][]*ir.Value {
	out := make([][]*ir.Value, len(rows))
	for i, r := range rows {
		out[i] = make([]*ir.Value, len(r))
		for j, f := range r {
			if !f.IsZero() {
				out[i][j] = l.lowerUniform(l.b, FracExpr(f, l.noise.Symbols), l.scalarsAfter)
			}
		}
	}
	return out
}

// varyingFilters gives every time-varying filter of at most
// noise.MaxVaryingStates states a Bounded filter in fn.Varying, one per
// set of states, whose model reads t and the scalars at the step: the host
// checks at every step that it does not grow (interp.Program.CheckVarying),
// and the region it prints comes from Jury's conditions over t and the
// scalars.
func (l *lowerer) varyingFilters(fn *ir.Func) {
	for _, sn := range l.noise.States {
		m := sn.Varying
		if m == nil || len(m.States) > noise.MaxVaryingStates ||
			slices.ContainsFunc(fn.Varying, func(fl *ir.Filter) bool { return fl.Over(m.States) }) {
			continue
		}
		fl := l.modelFilter(m, "varying_", l.noise.Symbols, fn.Scalars)
		fl.Bounded = true
		conds, _ := noise.Conditions(m)
		fl.Stability = ConditionStrings(conds, l.noise.Symbols)
		fn.Varying = append(fn.Varying, fl)
	}
}
