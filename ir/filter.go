package ir

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/fibergen/fibergen/gain"
	"github.com/fibergen/fibergen/ir/poly"
)

// FilterValues evaluates the filter's model at hypers h: M (row major) and b.
func (f *Func) FilterValues(fl *Filter, h []float64) (m, b []float64) {
	var entries []float64
	for _, s := range fl.Model.Stores() {
		entries = append(entries, evalUniform(f, s.Args[0], h))
	}
	k := len(fl.States)
	return entries[:k*k], entries[k*k:]
}

// CheckStability reports the first filter that is not stable at hypers h,
// with its spectral radius and the hypers it depends on.
func (f *Func) CheckStability(h []float64) error {
	for _, fl := range f.Filters {
		if err := f.checkFilter(fl, h); err != nil {
			return err
		}
	}
	return nil
}

func (f *Func) checkFilter(fl *Filter, h []float64) error {
	m, _ := f.FilterValues(fl, h)
	rho := gain.SpectralRadius(m, len(fl.States))
	if rho < 1 {
		return nil
	}
	msg := fmt.Sprintf("the filter of state %s is unstable at %s: its spectral radius is %.6g, not below 1", fl.State, f.settingOf(fl.Model, h), rho)
	if len(fl.Stability) > 0 {
		msg += " (it is stable where " + strings.Join(fl.Stability, " and ") + ")"
	}
	return errors.New(msg)
}

// settingOf prints the hypers block b reads, with their values in h.
func (f *Func) settingOf(b *Block, h []float64) string {
	var parts []string
	for _, hy := range f.Hypers {
		for _, v := range b.Values {
			if v.Op == OpHyper && v.Name == hy.Name {
				parts = append(parts, fmt.Sprintf("%s=%v", hy.Name, h[f.HyperIndex(hy.Name)]))
				break
			}
		}
	}
	if len(parts) == 0 {
		return "every hyper setting"
	}
	return strings.Join(parts, ", ")
}

// GainValue is a Gain evaluated at one hyper setting.
type GainValue struct {
	M, B           []float64 // M row major
	SpectralRadius float64
	Stable         bool
	A              float64 // NaN when unstable
}

// At evaluates g at hypers h of fn: the model, its spectral radius and A,
// exactly from the closed form (rounded once to float64) or by SteadyGain.
func (g *Gain) At(fn *Func, h []float64) GainValue {
	vals := make([]*big.Rat, len(g.Symbols))
	for i, s := range g.Symbols {
		vals[i] = new(big.Rat)
		if x := evalUniform(fn, s, h); !math.IsNaN(x) && !math.IsInf(x, 0) {
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
	r.SpectralRadius = gain.SpectralRadius(r.M, len(r.B))
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

// evalUniform computes a uniform value of hypers and constants at h.
func evalUniform(fn *Func, v *Value, h []float64) float64 {
	return evalUniformAt(fn, v, h, math.NaN())
}

// evalUniformAt computes a uniform value of hypers, t and constants at
// hypers h and step t.
func evalUniformAt(fn *Func, v *Value, h []float64, t float64) float64 {
	switch v.Op {
	case OpConst:
		return v.Const
	case OpHyper:
		return h[fn.HyperIndex(v.Name)]
	case OpStepIndex:
		return t
	case OpF32:
		return float64(float32(evalUniformAt(fn, v.Args[0], h, t)))
	}
	if v.Op.Arity() == 0 {
		return math.NaN()
	}
	x, y := evalUniformAt(fn, v.Args[0], h, t), math.NaN()
	if len(v.Args) > 1 {
		y = evalUniformAt(fn, v.Args[1], h, t)
	}
	return Eval64(v.Op, x, y)
}
