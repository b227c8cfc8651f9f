package noise

import (
	"math"
	"math/big"

	"github.com/fibergen/fibergen/gain"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/poly"
)

// GainValue is a Gain evaluated at one hyper setting.
type GainValue struct {
	M, B           []float64 // M row major
	SpectralRadius float64   // of the states that feed the target (gain.FeedingRadius)
	Stable         bool
	A              float64 // NaN when unstable
}

// At evaluates g at hypers h of fn: the model, its spectral radius and A,
// exactly from the closed form (rounded once to float64) or by SteadyGain.
func (g *Gain) At(fn *ir.Func, h []float64) GainValue {
	vals := make([]*big.Rat, len(g.Symbols))
	for i, s := range g.Symbols {
		vals[i] = new(big.Rat)
		if x := fn.EvalUniform(s, h, math.NaN()); !math.IsNaN(x) && !math.IsInf(x, 0) {
			vals[i].SetFloat64(x)
		}
	}
	var r GainValue
	for _, row := range g.Model.M {
		for _, e := range row {
			r.M = append(r.M, evalFrac(e, vals))
		}
	}
	for _, e := range g.Model.B {
		r.B = append(r.B, evalFrac(e, vals))
	}
	r.SpectralRadius = gain.FeedingRadius(r.M, len(r.B), g.Model.Target)
	r.Stable, r.A = r.SpectralRadius < 1, math.NaN()
	switch {
	case !r.Stable:
	case g.Sigma != nil:
		r.A = evalFrac(g.A, vals)
	default:
		r.A = gain.SteadyGain(r.M, r.B, g.Model.Target)
	}
	return r
}

func evalFrac(f poly.Frac, vals []*big.Rat) float64 {
	x, err := f.Eval(vals)
	if err != nil {
		return math.NaN()
	}
	v, _ := x.Float64()
	return v
}
