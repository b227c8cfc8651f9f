package ir

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/fibergen/fibergen/ir/poly"
)

// The host-side numerics of the noise models. The generated Go code
// carries copies of SpectralRadius, SteadyGain and FiniteGain that compute
// the same bits; the differential tests hold them together.

// SpectralRadius returns the spectral radius of the k×k matrix m (row
// major) by Gelfand's formula ρ = lim ‖M^n‖^(1/n) along n = 2^j, squaring
// a copy scaled to max-norm 1 and keeping the logarithm of the scale. After
// 64 squarings the estimate is within a few ulps for a diagonalizable M.
// A repeated eigenvalue in a Jordan block of size s is split by rounding,
// which limits the accuracy to about the s-th root of the rounding error
// (2e-6 relative for a double pole of a companion matrix, 2e-3 for a triple
// one); the split eigenvalues surround the true one, so the estimate errs
// upward, toward instability. Where rounding makes a power of such a matrix
// vanish exactly (a double pole at a power of two in companion form), later
// than any nilpotent k×k matrix could, the estimate of the last nonzero
// power stands. NaN or infinite entries give NaN or +Inf.
func SpectralRadius(m []float64, k int) float64 {
	a := append([]float64(nil), m...)
	logScale, est := 0.0, 0.0
	for j := 0; j < 64; j++ {
		n := 0.0
		for _, x := range a {
			n = math.Max(n, math.Abs(x))
		}
		if n == 0 && j > 0 && 1<<(j-1) >= k {
			return est // rounding cancelled a Jordan block: M^k ≠ 0 was seen
		}
		if n == 0 || math.IsNaN(n) || math.IsInf(n, 0) {
			return n
		}
		for i := range a {
			a[i] = a[i] / n
		}
		logScale = logScale + math.Log(n)
		est = math.Exp(math.Ldexp(logScale, -j))
		a = squareMatrix(a, k)
		logScale = 2 * logScale
	}
	return est
}

// squareMatrix returns a·a for a k×k row-major matrix, summing in index order.
func squareMatrix(a []float64, k int) []float64 {
	out := make([]float64, k*k)
	for i := 0; i < k; i++ {
		for j := 0; j < k; j++ {
			s := 0.0
			for l := 0; l < k; l++ {
				s = s + float64(a[i*k+l]*a[l*k+j])
			}
			out[i*k+j] = s
		}
	}
	return out
}

// SteadyGain solves Σ = M Σ Mᵀ + b bᵀ exactly, in rational arithmetic, for
// the float64 entries of m (k×k, row major) and b, and returns Σ[target][target]
// rounded to float64; NaN if the equation has no solution.
func SteadyGain(m, b []float64, target int) float64 {
	k := len(b)
	mr := make([][]*big.Rat, k)
	br := make([]*big.Rat, k)
	for i := range k {
		br[i] = new(big.Rat).SetFloat64(b[i])
		for j := range k {
			mr[i] = append(mr[i], new(big.Rat).SetFloat64(m[i*k+j]))
		}
	}
	if !allFinite(m) || !allFinite(b) {
		return math.NaN()
	}
	sigma, err := poly.LyapunovRat(mr, br)
	if err != nil {
		return math.NaN()
	}
	a, _ := sigma[target][target].Float64()
	return a
}

func allFinite(xs []float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// FiniteGain computes attenuation_t: the variance of a state's noise after
// t+1 draws from a zero state, over σ_w², which is Σ_{j=0..t} (e·M^j b)²
// for the state's unit vector e. Successive steps cost O(k²): it keeps
// u = M^(t+1) b and the running sum. Asking for an earlier step starts over.
type FiniteGain struct {
	m, b   []float64
	target int
	next   int       // the step the next term belongs to
	u, v   []float64 // u = M^next b; v is scratch for M u
	sum    float64
}

// NewFiniteGain returns the finite-time gain of z[target] for the model
// (m k×k row major, b).
func NewFiniteGain(m, b []float64, target int) *FiniteGain {
	return &FiniteGain{m: m, b: b, target: target, u: append([]float64(nil), b...), v: make([]float64, len(b))}
}

// At returns the gain at step t (from 0).
func (g *FiniteGain) At(t int) float64 {
	if t < g.next-1 {
		g.next, g.sum = 0, 0
		copy(g.u, g.b)
	}
	k := len(g.b)
	for ; g.next <= t; g.next++ {
		x := g.u[g.target]
		g.sum = g.sum + float64(x*x)
		for i := 0; i < k; i++ {
			s := 0.0
			for j := 0; j < k; j++ {
				s = s + float64(g.m[i*k+j]*g.u[j])
			}
			g.v[i] = s
		}
		g.u, g.v = g.v, g.u
	}
	return g.sum
}

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
	rho := SpectralRadius(m, len(fl.States))
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
	r.SpectralRadius = SpectralRadius(r.M, len(r.B))
	r.Stable, r.A = r.SpectralRadius < 1, math.NaN()
	switch {
	case !r.Stable:
	case g.Sigma != nil:
		r.A = evalFrac(g.A, vals)
	default:
		r.A = SteadyGain(r.M, r.B, g.Model.Target)
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
