package lower

import (
	"fmt"
	"slices"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/poly"
)

// lowerNoise lowers the noise block into the step, ahead of the step's
// own statements: z is the draw (OpDraw), the buffers are loaded and
// stored as states, and g, for the rest of the step, is the clipped mean
// plus σ_w·w (OpPrivatize). The block's names stay its own: only g leaves
// it.
func (l *lowerer) lowerNoise(d *dsl.NoiseDecl) {
	if d == nil {
		return
	}
	env := map[string]*ir.Value{}
	saved := l.env
	l.env = env
	for _, a := range d.Body {
		v := l.expr(a.RHS)
		if obj := l.info.Defs[a]; obj != nil && obj.Kind == dsl.BufferObj {
			v = l.toF32(v)
			st := l.store(a.LHS.Name, v)
			l.src[st] = fmt.Sprintf("`%s = %s` (line %d)", a.LHS.Name, dsl.ExprString(a.RHS), a.LHS.NamePos.Line)
		}
		env[a.LHS.Name] = v
	}
	x := l.b.NewValue(ir.OpLoad, ir.F32, false)
	x.Name = ir.GradName
	g := l.b.NewValue(ir.OpPrivatize, ir.F32, false, x, l.toF32(env[dsl.NoiseOut]))
	l.src[g] = "`g`"
	l.env = saved
	l.env[ir.GradName] = g
}

// addNoiseFilter gives fn the Filter of its noise block from the noise
// analysis (noise.NoiseModel), and checks it at the defaults: a filter
// that does not decay, or whose w does not read z, is an error at the
// block.
func (l *lowerer) addNoiseFilter(fn *ir.Func, d *dsl.NoiseDecl) {
	nm := l.noise.Noise
	if nm == nil {
		return
	}
	fl := fn.Noise
	fl.Model = &ir.Block{Name: "noise filter", Kind: ir.ModelBlock}
	names := fl.EntryNames()
	entries := slices.Concat(slices.Concat(nm.M...), nm.B, nm.H, []poly.Frac{nm.D})
	for i, e := range entries {
		v := l.lowerUniform(fl.Model, FracExpr(e, l.noise.Symbols), nil)
		s := fl.Model.NewValue(ir.OpStore, ir.None, true, v)
		s.Name = names[i]
	}
	if err := fn.CheckNoise(fn.DefaultHypers()); err != nil {
		l.errs.Addf(d.Keyword, "%v", err)
	}
}
