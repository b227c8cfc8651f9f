package noise_test

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/gain"
	"github.com/fibergen/fibergen/internal/irtest"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/noise"
	"github.com/fibergen/fibergen/ir/poly"
	"github.com/fibergen/fibergen/lower"
)

// Tests of the noise analysis and of attenuation / attenuation_t: the
// closed forms (compared symbolically), the models the analysis extracts,
// the errors for states the noise reaches non-linearly or through an
// unstable filter, and the host numerics (SpectralRadius, SteadyGain,
// FiniteGain). The helpers are prefixed with att to keep clear of the other
// tests of the package.

// Sources of the filters under test. Each is a whole program, written with
// program(), whose step names the filtered state in attenuation so that it
// gets a Filter.
var (
	// attInnovation is FiBeR's innovation filter alone, with omega's range
	// widened past the stability limit 4/3.
	attInnovation = irtest.Program(`hyper lr = 1e-3 in (0, inf)
hyper omega = 0.9 in (0, 2)
state gt = 0
state r = 0`, `nu = g - gt
r = (1 - omega) * r + omega * nu
gt = gt + r
theta = theta - lr * gt / (1 + attenuation(gt) * sigma_w2)`)

	// attInnovationSwapped updates gt before r, so gt reads the old r and
	// r reads the new gt (its innovation is taken against the new gt).
	attInnovationSwapped = irtest.Program(`hyper lr = 1e-3 in (0, inf)
hyper omega = 0.9 in (0, 2)
state gt = 0
state r = 0`, `gt = gt + r
r = (1 - omega) * r + omega * (g - gt)
theta = theta - lr * gt / (1 + attenuation(gt) * sigma_w2)`)

	// attEMA is DiSK's filter: an EMA with gain kappa.
	attEMA = irtest.Program(`hyper lr = 1e-3 in (0, inf)
hyper kappa = 0.6 in (0, 1]
state gt = 0`, `gt = (1 - kappa) * gt + kappa * g
theta = theta - lr * gt / (1 + attenuation(gt) * sigma_w2)`)

	// attEMAFromG is the EMA started from step 0's g: the start is a
	// transient, and the steady attenuation is the EMA's.
	attEMAFromG = irtest.Program(`hyper lr = 1e-3 in (0, inf)
hyper kappa = 0.6 in (0, 1]
state gt = g`, `gt = (1 - kappa) * gt + kappa * g
theta = theta - lr * gt / (1 + attenuation(gt) * sigma_w2)`)

	// attEMASelect is the same start written by hand: a select on t < 1.
	attEMASelect = irtest.Program(`hyper lr = 1e-3 in (0, inf)
hyper kappa = 0.6 in (0, 1]
state gt = 0`, `gt = (1 - kappa) * select(t < 1, g, gt) + kappa * g
theta = theta - lr * gt / (1 + attenuation(gt) * sigma_w2)`)

	// attUnfiltered stores g as it comes.
	attUnfiltered = irtest.Program(`hyper lr = 1e-3 in (0, inf)
state x = 0`, `x = g
theta = theta - lr * x / (1 + attenuation(x) * sigma_w2)`)

	// attAlphaBeta is the alpha-beta tracker: level l and trend s.
	attAlphaBeta = irtest.Program(`hyper lr = 1e-3 in (0, inf)
hyper alpha = 0.5 in (0, 2)
hyper beta = 0.2 in (0, 4)
state l = 0
state s = 0`, `p = l + s
res = g - p
l = p + alpha * res
s = s + beta * res
theta = theta - lr * l / (1 + attenuation(l) * sigma_w2 + attenuation(s))`)

	// attCascade is three EMAs in a row, each reading the new value of the
	// one before.
	attCascade = irtest.Program(`hyper lr = 1e-3 in (0, inf)
hyper kappa = 0.3 in (0, 1]
state e1 = 0
state e2 = 0
state e3 = 0`, `e1 = (1 - kappa) * e1 + kappa * g
e2 = (1 - kappa) * e2 + kappa * e1
e3 = (1 - kappa) * e3 + kappa * e2
theta = theta - lr * e3 / (1 + attenuation(e3) * sigma_w2)`)

	// attABG is the alpha-beta-gamma tracker: level x, trend v and
	// curvature acc.
	attABG = irtest.Program(`hyper lr = 1e-3 in (0, inf)
hyper alpha = 0.5 in (0, 2)
hyper beta = 0.2 in (0, 4)
hyper gamma = 0.02 in (0, 4)
state x = 0
state v = 0
state acc = 0`, `xp = x + v + 0.5 * acc
vp = v + acc
res = g - xp
x = xp + alpha * res
v = vp + beta * res
acc = acc + gamma * res
theta = theta - lr * x / (1 + attenuation(x) * sigma_w2 + attenuation_t(v) + attenuation(acc))`)

	// attDelay: y reads x after (y = x + g, order A) or before (order B)
	// x's update, x = c x + g.
	attDelayAfter = irtest.Program(`hyper lr = 1e-3 in (0, inf)
hyper c = 0.5 in (-1, 1)
state x = 0
state y = 0`, `x = c * x + g
y = x + g
theta = theta - lr * y / (1 + attenuation(y))`)
	attDelayBefore = irtest.Program(`hyper lr = 1e-3 in (0, inf)
hyper c = 0.5 in (-1, 1)
state x = 0
state y = 0`, `y = x + g
x = c * x + g
theta = theta - lr * y / (1 + attenuation(y))`)
)

// attCompile compiles src, failing the test on any error.
func attCompile(t testing.TB, src string) *irtest.Func {
	t.Helper()
	fn, errs, err := irtest.Compile("test.dsl", []byte(src))
	if len(errs) > 0 || err != nil {
		t.Fatalf("Compile: %v %v\nsource:\n%s", errs, err, src)
	}
	return fn
}

// attFiber compiles the shipped optimizers/fiber.dsl.
func attFiber(t testing.TB) *irtest.Func {
	t.Helper()
	src, err := os.ReadFile("../../optimizers/fiber.dsl")
	if err != nil {
		t.Fatal(err)
	}
	fn, errs, err := irtest.Compile("fiber.dsl", src)
	if len(errs) > 0 || err != nil {
		t.Fatalf("Compile(fiber.dsl): %v %v", errs, err)
	}
	return fn
}

// attSym returns x_i for the hyper named name in fn.Noise.Symbols.
func attSym(t testing.TB, fn *irtest.Func, name string) poly.Poly {
	t.Helper()
	for i, s := range fn.Noise.Symbols {
		if s.Op == ir.OpHyper && s.Name == name {
			return poly.Var(i)
		}
	}
	t.Fatalf("hyper %s is not a symbol of the noise analysis (symbols: %v)", name, attSymbolNames(fn))
	return poly.Poly{}
}

func attSymbolNames(fn *irtest.Func) []string {
	var out []string
	for _, s := range fn.Noise.Symbols {
		out = append(out, ir.ExprString(s))
	}
	return out
}

// attFrac returns num/den, failing on a zero denominator.
func attFrac(t testing.TB, num, den poly.Poly) poly.Frac {
	t.Helper()
	f, err := poly.NewFrac(num, den)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// attModel returns the noise model of state s.
func attModel(t testing.TB, fn *irtest.Func, s string) *noise.Model {
	t.Helper()
	if fn.Noise == nil {
		t.Fatal("fn.Noise is nil")
	}
	for _, sn := range fn.Noise.States {
		if sn.State == s {
			if sn.Model == nil {
				t.Fatalf("state %s has no noise model: %s", s, sn.Why)
			}
			return sn.Model
		}
	}
	t.Fatalf("fn.Noise has no entry for state %s", s)
	return nil
}

// attSolve solves the noise model of state s.
func attSolve(t testing.TB, fn *irtest.Func, s string) *noise.Gain {
	t.Helper()
	g, err := noise.Solve(attModel(t, fn, s), fn.Noise.Symbols)
	if err != nil {
		t.Fatalf("Solve(%s): %v", s, err)
	}
	return g
}

// attPoint returns the symbols' values at hypers h, exactly (every symbol
// must be a hyper).
func attPoint(t testing.TB, fn *irtest.Func, h []float64) []*big.Rat {
	t.Helper()
	x := make([]*big.Rat, len(fn.Noise.Symbols))
	for i, s := range fn.Noise.Symbols {
		if s.Op != ir.OpHyper {
			x[i] = new(big.Rat) // not a variable of the models under test
			continue
		}
		x[i] = new(big.Rat).SetFloat64(h[fn.HyperIndex(s.Name)])
	}
	return x
}

// attHypers returns the defaults with the named hypers overridden.
func attHypers(t testing.TB, fn *irtest.Func, set map[string]float64) []float64 {
	t.Helper()
	h := fn.DefaultHypers()
	for name, v := range set {
		i := fn.HyperIndex(name)
		if i < 0 {
			t.Fatalf("no hyper %s", name)
		}
		h[i] = v
	}
	return h
}

func attEval(t testing.TB, f poly.Frac, x []*big.Rat) float64 {
	t.Helper()
	r, err := f.Eval(x)
	if err != nil {
		t.Fatalf("Eval(%v): %v", f, err)
	}
	v, _ := r.Float64()
	return v
}

// attModelValues evaluates a model's M (row major) and b at x in float64.
func attModelValues(t testing.TB, m *noise.Model, x []*big.Rat) (mv, bv []float64) {
	t.Helper()
	for _, row := range m.M {
		for _, e := range row {
			mv = append(mv, attEval(t, e, x))
		}
	}
	for _, e := range m.B {
		bv = append(bv, attEval(t, e, x))
	}
	return mv, bv
}

// attImpulseSum returns Σ_j ((M^j b)[target])², the squared ℓ2 norm of the
// impulse response, summing until the remaining state is negligible.
func attImpulseSum(m, b []float64, target int) float64 {
	k := len(b)
	u := append([]float64(nil), b...)
	sum := 0.0
	for j := 0; j < 10_000_000; j++ {
		sum += u[target] * u[target]
		next := make([]float64, k)
		norm := 0.0
		for i := range k {
			for l := range k {
				next[i] += m[i*k+l] * u[l]
			}
			norm += next[i] * next[i]
		}
		u = next
		if j > k && norm <= 1e-40*math.Max(sum, 1e-300) {
			break
		}
	}
	return sum
}

func attRelErr(got, want float64) float64 {
	if got == want {
		return 0
	}
	return math.Abs(got-want) / math.Max(math.Abs(want), 1e-300)
}

// TestAttenuationClosedForms checks the closed forms of attenuation
// symbolically against the known ones, their printed form, and at several
// points against the impulse response of the extracted model.
func TestAttenuationClosedForms(t *testing.T) {
	one := poly.Int(1)
	tests := []struct {
		name   string
		fn     func(t testing.TB) *irtest.Func
		state  string
		states []string // the model's z
		want   func(t *testing.T, fn *irtest.Func) poly.Frac
		expr   string // the printed closed form; "" to skip
		points []map[string]float64
	}{
		{
			name: "fiber gt", fn: attFiber, state: "gt", states: []string{"gt", "r"},
			want: func(t *testing.T, fn *irtest.Func) poly.Frac {
				w := attSym(t, fn, "omega")
				return attFrac(t, poly.Int(2).Sub(w), poly.Int(4).Sub(poly.Int(3).Mul(w)))
			},
			expr:   "(2 - omega) / (4 - 3 * omega)",
			points: []map[string]float64{{"omega": 0.9}, {"omega": 0.3}, {"omega": 1}, {"omega": 0.01}},
		},
		{
			name: "fiber r", fn: attFiber, state: "r", states: []string{"gt", "r"},
			want: func(t *testing.T, fn *irtest.Func) poly.Frac {
				w := attSym(t, fn, "omega")
				return attFrac(t, poly.Int(2).Mul(w), poly.Int(4).Sub(poly.Int(3).Mul(w)))
			},
			points: []map[string]float64{{"omega": 0.9}, {"omega": 0.3}},
		},
		{
			name: "innovation filter gt", fn: func(t testing.TB) *irtest.Func { return attCompile(t, attInnovation) }, state: "gt", states: []string{"gt", "r"},
			want: func(t *testing.T, fn *irtest.Func) poly.Frac {
				w := attSym(t, fn, "omega")
				return attFrac(t, poly.Int(2).Sub(w), poly.Int(4).Sub(poly.Int(3).Mul(w)))
			},
			expr:   "(2 - omega) / (4 - 3 * omega)",
			points: []map[string]float64{{"omega": 1.2}, {"omega": 1.33}, {"omega": 0.5}},
		},
		{
			name: "ema", fn: func(t testing.TB) *irtest.Func { return attCompile(t, attEMA) }, state: "gt", states: []string{"gt"},
			want: func(t *testing.T, fn *irtest.Func) poly.Frac {
				k := attSym(t, fn, "kappa")
				return attFrac(t, k, poly.Int(2).Sub(k))
			},
			expr:   "kappa / (2 - kappa)",
			points: []map[string]float64{{"kappa": 0.6}, {"kappa": 0.05}, {"kappa": 1}},
		},
		{
			name: "ema started from g", fn: func(t testing.TB) *irtest.Func { return attCompile(t, attEMAFromG) }, state: "gt", states: []string{"gt"},
			want: func(t *testing.T, fn *irtest.Func) poly.Frac {
				k := attSym(t, fn, "kappa")
				return attFrac(t, k, poly.Int(2).Sub(k))
			},
			expr:   "kappa / (2 - kappa)",
			points: []map[string]float64{{"kappa": 0.6}, {"kappa": 0.05}, {"kappa": 1}},
		},
		{
			name: "ema started by a select on t < 1", fn: func(t testing.TB) *irtest.Func { return attCompile(t, attEMASelect) }, state: "gt", states: []string{"gt"},
			want: func(t *testing.T, fn *irtest.Func) poly.Frac {
				k := attSym(t, fn, "kappa")
				return attFrac(t, k, poly.Int(2).Sub(k))
			},
			expr:   "kappa / (2 - kappa)",
			points: []map[string]float64{{"kappa": 0.6}, {"kappa": 0.05}, {"kappa": 1}},
		},
		{
			name: "disk.dsl gt", state: "gt", states: []string{"gt"},
			fn: func(t testing.TB) *irtest.Func {
				src, err := os.ReadFile("../../optimizers/disk.dsl")
				if err != nil {
					t.Fatal(err)
				}
				return attCompile(t, string(src))
			},
			want: func(t *testing.T, fn *irtest.Func) poly.Frac {
				k := attSym(t, fn, "kappa")
				return attFrac(t, k, poly.Int(2).Sub(k))
			},
			expr:   "kappa / (2 - kappa)",
			points: []map[string]float64{{"kappa": 0.6}, {"kappa": 0.1}},
		},
		{
			name: "unfiltered", fn: func(t testing.TB) *irtest.Func { return attCompile(t, attUnfiltered) }, state: "x", states: []string{"x"},
			want:   func(t *testing.T, fn *irtest.Func) poly.Frac { return poly.FracOf(one) },
			expr:   "1",
			points: []map[string]float64{{}},
		},
		{
			// Kalata (1984), Benedict & Bordner (1962): the noise-reduction
			// ratio of the filtered position of the alpha-beta tracker.
			name: "alpha-beta level", fn: func(t testing.TB) *irtest.Func { return attCompile(t, attAlphaBeta) }, state: "l", states: []string{"l", "s"},
			want: func(t *testing.T, fn *irtest.Func) poly.Frac {
				a, b := attSym(t, fn, "alpha"), attSym(t, fn, "beta")
				num := poly.Int(2).Mul(a).Mul(a).Add(poly.Int(2).Mul(b)).Sub(poly.Int(3).Mul(a).Mul(b))
				den := a.Mul(poly.Int(4).Sub(poly.Int(2).Mul(a)).Sub(b))
				return attFrac(t, num, den)
			},
			points: []map[string]float64{{"alpha": 0.5, "beta": 0.2}, {"alpha": 1.5, "beta": 0.9}, {"alpha": 0.1, "beta": 0.005}, {"alpha": 1.9, "beta": 0.15}},
		},
		{
			// The velocity ratio, 2β²/(α(4 − 2α − β)) (per sampling period²).
			name: "alpha-beta trend", fn: func(t testing.TB) *irtest.Func { return attCompile(t, attAlphaBeta) }, state: "s", states: []string{"l", "s"},
			want: func(t *testing.T, fn *irtest.Func) poly.Frac {
				a, b := attSym(t, fn, "alpha"), attSym(t, fn, "beta")
				num := poly.Int(2).Mul(b).Mul(b)
				den := a.Mul(poly.Int(4).Sub(poly.Int(2).Mul(a)).Sub(b))
				return attFrac(t, num, den)
			},
			points: []map[string]float64{{"alpha": 0.5, "beta": 0.2}, {"alpha": 1.5, "beta": 0.9}, {"alpha": 0.1, "beta": 0.005}},
		},
		{
			// κ(κ⁴ − 4κ³ + 10κ² − 12κ + 6)/(2 − κ)⁵, derived independently
			// (sympy) from the model below; with one stage it is κ/(2 − κ).
			name: "three EMAs", fn: func(t testing.TB) *irtest.Func { return attCompile(t, attCascade) }, state: "e3", states: []string{"e1", "e2", "e3"},
			want: func(t *testing.T, fn *irtest.Func) poly.Frac {
				k := attSym(t, fn, "kappa")
				num := k.Mul(k.Pow(4).Sub(poly.Int(4).Mul(k.Pow(3))).Add(poly.Int(10).Mul(k.Pow(2))).Sub(poly.Int(12).Mul(k)).Add(poly.Int(6)))
				return attFrac(t, num, poly.Int(2).Sub(k).Pow(5))
			},
			points: []map[string]float64{{"kappa": 0.3}, {"kappa": 0.9}, {"kappa": 0.02}, {"kappa": 1}},
		},
		{
			// theta is part of the loop: z = (x, theta).
			name: "theta in the loop", state: "x", states: []string{"x", "theta"},
			fn: func(t testing.TB) *irtest.Func {
				return attCompile(t, irtest.Program("hyper beta = 0.5 in (0, 1)\nstate x = 0",
					"x = beta * x + g - theta\ntheta = theta + 0.5 * x + 0.001 * attenuation(x)"))
			},
			want: func(t *testing.T, fn *irtest.Func) poly.Frac { // 4/((1 - β)(3 + 4β)), sympy
				b := attSym(t, fn, "beta")
				return attFrac(t, poly.Int(4), one.Sub(b).Mul(poly.Int(3).Add(poly.Int(4).Mul(b))))
			},
			points: []map[string]float64{{"beta": 0.5}, {"beta": 0.9}, {"beta": 0.01}},
		},
		{
			name: "order: y after x", fn: func(t testing.TB) *irtest.Func { return attCompile(t, attDelayAfter) }, state: "y", states: []string{"x", "y"},
			want: func(t *testing.T, fn *irtest.Func) poly.Frac { // (4 - 3c²)/(1 - c²)
				c := attSym(t, fn, "c")
				return attFrac(t, poly.Int(4).Sub(poly.Int(3).Mul(c).Mul(c)), one.Sub(c.Mul(c)))
			},
			points: []map[string]float64{{"c": 0.5}, {"c": -0.9}},
		},
		{
			name: "order: y before x", fn: func(t testing.TB) *irtest.Func { return attCompile(t, attDelayBefore) }, state: "y", states: []string{"x", "y"},
			want: func(t *testing.T, fn *irtest.Func) poly.Frac { // (2 - c²)/(1 - c²)
				c := attSym(t, fn, "c")
				return attFrac(t, poly.Int(2).Sub(c.Mul(c)), one.Sub(c.Mul(c)))
			},
			points: []map[string]float64{{"c": 0.5}, {"c": -0.9}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn := tt.fn(t)
			m := attModel(t, fn, tt.state)
			if !slices.Equal(m.States, tt.states) || m.States[m.Target] != tt.state {
				t.Fatalf("model of %s: z = %v, target %d; want z = %v", tt.state, m.States, m.Target, tt.states)
			}
			g := attSolve(t, fn, tt.state)
			if g.Sigma == nil {
				t.Fatalf("the attenuation of %s is numeric (%s), want a closed form", tt.state, g.Numeric)
			}
			want := tt.want(t, fn)
			if !g.A.Equal(want) {
				t.Errorf("A(%s) = %v, want %v (symbols %v)", tt.state, g.A, want, attSymbolNames(fn))
			}
			if !g.Sigma[m.Target][m.Target].Equal(g.A) {
				t.Errorf("A = %v is not Sigma[%d][%d] = %v", g.A, m.Target, m.Target, g.Sigma[m.Target][m.Target])
			}
			printed := dsl.ExprString(lower.ClosedForm(g))
			if tt.expr != "" && printed != tt.expr {
				t.Errorf("closed form printed %q, want %q", printed, tt.expr)
			}
			if fl := fn.Filter(tt.state); fl != nil && fl.Expr != printed {
				t.Errorf("Filter(%s).Expr = %q, Gain.Expr() prints %q", tt.state, fl.Expr, printed)
			}
			for _, pt := range tt.points {
				x := attPoint(t, fn, attHypers(t, fn, pt))
				a := attEval(t, g.A, x)
				mv, bv := attModelValues(t, m, x)
				if imp := attImpulseSum(mv, bv, m.Target); attRelErr(a, imp) > 1e-9 {
					t.Errorf("at %v: A = %.17g, impulse-response sum %.17g", pt, a, imp)
				}
				if sg := gain.SteadyGain(mv, bv, m.Target); attRelErr(sg, a) > 1e-13 {
					t.Errorf("at %v: A = %.17g, SteadyGain %.17g", pt, a, sg)
				}
			}
		})
	}
}

// TestAttenuationSigma checks the whole covariance of FiBeR's filter: the
// cross term too.
func TestAttenuationSigma(t *testing.T) {
	fn := attFiber(t)
	g := attSolve(t, fn, "gt")
	w := attSym(t, fn, "omega")
	den := poly.Int(4).Sub(poly.Int(3).Mul(w))
	// Σ[gt][r] = ω/(4 − 3ω) (sympy): with Σ[r][r] = 2ω/(4 − 3ω).
	want := [][]poly.Frac{
		{attFrac(t, poly.Int(2).Sub(w), den), attFrac(t, w, den)},
		{attFrac(t, w, den), attFrac(t, poly.Int(2).Mul(w), den)},
	}
	for i := range want {
		for j := range want[i] {
			if !g.Sigma[i][j].Equal(want[i][j]) {
				t.Errorf("Sigma[%d][%d] = %v, want %v", i, j, g.Sigma[i][j], want[i][j])
			}
		}
	}
}

// TestAttenuationABG checks the three-state alpha-beta-gamma tracker
// against the impulse response of its model, symbolic or numeric.
func TestAttenuationABG(t *testing.T) {
	fn := attCompile(t, attABG)
	points := []map[string]float64{
		{"alpha": 0.5, "beta": 0.2, "gamma": 0.02},
		{"alpha": 0.9, "beta": 0.5, "gamma": 0.05},
		{"alpha": 0.2, "beta": 0.02, "gamma": 0.001},
		{"alpha": 1.2, "beta": 0.8, "gamma": 0.1},
	}
	for _, s := range []string{"x", "v", "acc"} {
		m := attModel(t, fn, s)
		if !slices.Equal(m.States, []string{"x", "v", "acc"}) {
			t.Fatalf("model of %s: z = %v", s, m.States)
		}
		g := attSolve(t, fn, s)
		fl := fn.Filter(s)
		if fl == nil {
			t.Fatalf("no Filter for %s", s)
		}
		for _, pt := range points {
			h := attHypers(t, fn, pt)
			if err := fn.CheckStability(h); err != nil {
				t.Fatalf("at %v: %v", pt, err)
			}
			x := attPoint(t, fn, h)
			mv, bv := attModelValues(t, m, x)
			imp := attImpulseSum(mv, bv, m.Target)
			fm, fb := fn.FilterValues(fl, h)
			steady := gain.SteadyGain(fm, fb, fl.Target)
			if attRelErr(steady, imp) > 1e-9 {
				t.Errorf("%s at %v: SteadyGain %.17g, impulse-response sum %.17g", s, pt, steady, imp)
			}
			if g.Sigma != nil {
				if a := attEval(t, g.A, x); attRelErr(a, imp) > 1e-9 {
					t.Errorf("%s at %v: A = %.17g, impulse-response sum %.17g", s, pt, a, imp)
				}
			} else {
				t.Logf("%s: numeric (%s)", s, g.Numeric)
			}
		}
	}
}

// attFracs converts polynomials to fractions (a row of M, or b).
func attFracs(ps ...poly.Poly) []poly.Frac {
	out := make([]poly.Frac, len(ps))
	for i, p := range ps {
		out[i] = poly.FracOf(p)
	}
	return out
}

func attSameModel(t *testing.T, what string, m *noise.Model, wantM [][]poly.Frac, wantB []poly.Frac) {
	t.Helper()
	for i := range wantM {
		for j := range wantM[i] {
			if !m.M[i][j].Equal(wantM[i][j]) {
				t.Errorf("%s: M[%d][%d] = %v, want %v", what, i, j, m.M[i][j], wantM[i][j])
			}
		}
		if !m.B[i].Equal(wantB[i]) {
			t.Errorf("%s: b[%d] = %v, want %v", what, i, m.B[i], wantB[i])
		}
	}
}

// TestAttenuationStatementOrder checks that a state read after its update
// contributes its new value and one read before it its old value.
func TestAttenuationStatementOrder(t *testing.T) {
	one := poly.Int(1)
	t.Run("fiber", func(t *testing.T) {
		fn := attCompile(t, attInnovation)
		w := attSym(t, fn, "omega")
		// r = (1-ω) r + ω (g - gt); gt = gt + r_new = (1-ω) gt + (1-ω) r + ω g.
		attSameModel(t, "r then gt", attModel(t, fn, "gt"),
			[][]poly.Frac{attFracs(one.Sub(w), one.Sub(w)), attFracs(w.Neg(), one.Sub(w))},
			attFracs(w, w))

		sw := attCompile(t, attInnovationSwapped)
		w = attSym(t, sw, "omega")
		// gt = gt + r_old; r = (1-ω) r + ω (g - gt_new) = -ω gt + (1-2ω) r + ω g.
		m := attModel(t, sw, "gt")
		attSameModel(t, "gt then r", m,
			[][]poly.Frac{attFracs(one, one), attFracs(w.Neg(), one.Sub(poly.Int(2).Mul(w)))},
			attFracs(poly.Poly{}, w))
		// gt is now the previous step's gt of the original order (delayed by
		// a step), so its variance is the same.
		g := attSolve(t, sw, "gt")
		want := attFrac(t, poly.Int(2).Sub(w), poly.Int(4).Sub(poly.Int(3).Mul(w)))
		if g.Sigma == nil || !g.A.Equal(want) {
			t.Errorf("swapped: A(gt) = %v (numeric %q), want %v", g.A, g.Numeric, want)
		}
	})
	t.Run("x read after or before its update", func(t *testing.T) {
		after, before := attCompile(t, attDelayAfter), attCompile(t, attDelayBefore)
		c := attSym(t, after, "c")
		attSameModel(t, "after", attModel(t, after, "y"),
			[][]poly.Frac{attFracs(c, poly.Poly{}), attFracs(c, poly.Poly{})},
			attFracs(one, poly.Int(2)))
		c = attSym(t, before, "c")
		attSameModel(t, "before", attModel(t, before, "y"),
			[][]poly.Frac{attFracs(c, poly.Poly{}), attFracs(one, poly.Poly{})},
			attFracs(one, one))
		ga, gb := attSolve(t, after, "y"), attSolve(t, before, "y")
		if ga.A.Equal(gb.A) {
			t.Errorf("the order of the statements does not change A(y) = %v", ga.A)
		}
	})
	t.Run("cascade delayed", func(t *testing.T) {
		// e2 reading the old e1 is e2 of the in-order cascade delayed by a
		// step: b_e2 = 0 instead of κ², and the same A.
		src := irtest.Program(`hyper kappa = 0.3 in (0, 1]
state e1 = 0
state e2 = 0`, `e2 = (1 - kappa) * e2 + kappa * e1
e1 = (1 - kappa) * e1 + kappa * g
theta = theta - 0.001 * e2 / (1 + attenuation(e2))`)
		inOrder := irtest.Program(`hyper kappa = 0.3 in (0, 1]
state e1 = 0
state e2 = 0`, `e1 = (1 - kappa) * e1 + kappa * g
e2 = (1 - kappa) * e2 + kappa * e1
theta = theta - 0.001 * e2 / (1 + attenuation(e2))`)
		d, o := attCompile(t, src), attCompile(t, inOrder)
		k := attSym(t, d, "kappa")
		attSameModel(t, "delayed", attModel(t, d, "e2"),
			[][]poly.Frac{attFracs(one.Sub(k), poly.Poly{}), attFracs(k, one.Sub(k))},
			attFracs(k, poly.Poly{}))
		k = attSym(t, o, "kappa")
		attSameModel(t, "in order", attModel(t, o, "e2"),
			[][]poly.Frac{attFracs(one.Sub(k), poly.Poly{}), attFracs(k.Sub(k.Mul(k)), one.Sub(k))},
			attFracs(k, k.Mul(k)))
		if gd, gi := attSolve(t, d, "e2"), attSolve(t, o, "e2"); !gd.A.Equal(gi.A) {
			t.Errorf("delayed A(e2) = %v, in order %v: a delay does not change the variance", gd.A, gi.A)
		}
	})
}

// TestAttenuationCompileErrors checks that attenuation of a state the
// noise does not reach linearly, or reaches through a filter with no
// stable setting, is an error at the call naming the reason.
func TestAttenuationCompileErrors(t *testing.T) {
	const decls = `hyper lr = 1e-3 in (0, inf)
hyper beta2 = 0.999 in [0, 1)
state x = 0
state c = 1`
	tests := []struct {
		name string
		body string
		want []string
		not  []string // nor may it mention these
	}{
		{
			name: "square of a noisy value",
			body: "x = 0.5 * x + g\nc = beta2 * c + (1 - beta2) * (x * x)\ntheta = theta - lr * attenuation(c)",
			want: []string{"attenuation(c)", "`x * x`", "multiplies two noisy values", "c = beta2 * c + (1 - beta2) * (x * x)"},
		},
		{
			name: "max",
			body: "x = max(x, g)\nc = c + 1\ntheta = theta - lr * attenuation(x)",
			want: []string{"attenuation(x)", "max(x, g)", "noisy value"},
		},
		{
			name: "sqrt",
			body: "x = 0.5 * x + sqrt(g)\nc = c + 1\ntheta = theta - lr * attenuation(x)",
			want: []string{"attenuation(x)", "sqrt(g)", "noisy value"},
		},
		{
			name: "abs",
			body: "x = 0.5 * x + abs(g)\nc = c + 1\ntheta = theta - lr * attenuation(x)",
			want: []string{"attenuation(x)", "abs(g)", "noisy value"},
		},
		{
			name: "division by a per-coordinate value",
			body: "c = c + 1\nx = 0.5 * x + g / c\ntheta = theta - lr * attenuation(x)",
			want: []string{"attenuation(x)", "`g / c`", "divides the noise by a per-coordinate value"},
		},
		{
			name: "division by a noisy value",
			body: "c = c + 1\nx = 0.5 * x + 1 / g\ntheta = theta - lr * attenuation(x)",
			want: []string{"attenuation(x)", "1 / g", "noisy value"},
		},
		{
			name: "scaled by a per-coordinate value",
			body: "c = c + 1\nx = c * x + g\ntheta = theta - lr * attenuation(x)",
			want: []string{"attenuation(x)", "`c * x`", "per-coordinate value"},
		},
		{
			name: "coefficient depends on t, without a limit",
			body: "x = x * cos(t) / 2 + g\nc = c + 1\ntheta = theta - lr * attenuation(x)",
			want: []string{"attenuation(x)", "x = x * cos(t) / 2 + g", "changes from step to step", "no limit"},
		},
		{
			name: "gain depends on t, without a limit",
			body: "x = 0.5 * x + g * (t + 1)\nc = c + 1\ntheta = theta - lr * attenuation(x)",
			want: []string{"attenuation(x)", "changes from step to step", "grows without bound"},
		},
		{
			name: "coefficient depends on t: attenuation_t follows it",
			body: "x = x * sin(t) / 2 + g\nc = c + 1\ntheta = theta - lr * attenuation(x)",
			want: []string{"attenuation(x)", "changes from step to step (it reads t)", "attenuation_t(x) follows its variance exactly"},
		},
		{
			name: "a time-varying filter that starts from g: no attenuation_t either",
			body: "x = select(t == 0, g, x) * sin(t) / 2 + g\nc = c + 1\ntheta = theta - lr * attenuation(x)",
			want: []string{"attenuation(x)", "changes from step to step (it reads t)"},
			not:  []string{"attenuation_t(x) follows"},
		},
		{
			name: "a divisor that reads t and is zero",
			body: "z = t - t\nx = x + g / z\nc = c + 1\ntheta = theta - lr * attenuation_t(x)",
			want: []string{"attenuation_t(x)", "divides by zero"},
		},
		{
			name: "a coefficient that reads t and sigma_w2: sigma_w2 is the reason",
			body: "x = x / (t + 2 + sigma_w2) + g\nc = c + 1\ntheta = theta - lr * attenuation_t(x)",
			want: []string{"attenuation_t(x)", "(it reads sigma_w2)"},
			not:  []string{"(it reads t)", "attenuation_t(x) follows"},
		},
		{
			name: "attenuation_t of a time-varying filter that starts from g",
			body: "x = select(t == 0, g, x) / (t + 2) + g\nc = c + 1\ntheta = theta - lr * attenuation_t(x)",
			want: []string{"attenuation_t(x)", "starts otherwise at step 0, at `select(t == 0, g, x)`"},
		},
		{
			name: "coefficient depends on sigma_w2",
			body: "x = x / (1 + sigma_w2) + g\nc = c + 1\ntheta = theta - lr * attenuation(x)",
			want: []string{"attenuation(x)", "changes from step to step"},
		},
		{
			name: "noise never reaches the state",
			body: "x = 0.5 * x + g\nc = 0.5 * c + 1\ntheta = theta - lr * attenuation(c)",
			want: []string{"attenuation(c)", "never reaches c"},
		},
		{
			name: "noise never reaches the state, attenuation_t",
			body: "x = 0.5 * x + g\nc = 0.5 * c + 1\ntheta = theta - lr * attenuation_t(c)",
			want: []string{"attenuation_t(c)", "never reaches c"},
		},
		{
			name: "through a nonlinear state",
			body: "c = 0.5 * c + g * g\nx = 0.5 * x + c\ntheta = theta - lr * attenuation(x)",
			want: []string{"attenuation(x)", "`g * g`", "multiplies two noisy values"},
		},
		{
			name: "through theta",
			body: "c = c + 1\nx = 0.5 * x + g - 0.1 * theta\ntheta = theta - lr * sqrt(abs(x)) + attenuation(x)",
			want: []string{"attenuation(x)", "abs(x)", "noisy value"},
		},
		{
			name: "attenuation_t of a state that starts from g",
			body: "x = 0.5 * select(t == 0, g, x) + g\nc = c + 1\ntheta = theta - lr * attenuation_t(x)",
			want: []string{"attenuation_t(x)", "starts otherwise at step 0, at `select(t == 0, g, x)`", "attenuation(x), the steady value"},
		},
		{
			name: "a select on t that is not the first step",
			body: "x = 0.5 * select(t < 2, g, x) + g\nc = c + 1\ntheta = theta - lr * attenuation(x)",
			want: []string{"attenuation(x)", "select(t < 2, g, x)", "selects by or from a noisy value"},
		},
		{
			name: "random walk",
			body: "x = x + g\nc = c + 1\ntheta = theta - lr * attenuation(x)",
			want: []string{"attenuation(x)", "grows without bound"},
		},
		{
			name: "explosive for every setting",
			body: "x = 2 * x + g\nc = c + 1\ntheta = theta - lr * attenuation(x)",
			want: []string{"attenuation(x)", "spectral radius"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := irtest.Program(decls, tt.body)
			fn, errs, err := irtest.Compile("test.dsl", []byte(src))
			if err != nil {
				t.Fatalf("Compile: internal error %v", err)
			}
			if len(errs) == 0 {
				t.Fatalf("Compile succeeded (fn %v), want an error mentioning %q", fn != nil, tt.want)
			}
			if fn != nil {
				t.Errorf("Compile returned a Func with its errors")
			}
			msg := errs.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(msg, w) {
					t.Errorf("error %q mentions %q", msg, w)
				}
			}
			// The error is at the call: the line of theta's update.
			line := strings.Count(src[:strings.Index(src, "theta =")], "\n") + 1
			if errs[0].Pos.Line != line {
				t.Errorf("error at line %d, want the call's line %d: %v", errs[0].Pos.Line, line, errs)
			}
		})
	}
}

// TestAttenuationNoiseWhy checks the noise analysis itself for the states
// it cannot model, without an attenuation call.
func TestAttenuationNoiseWhy(t *testing.T) {
	fn := attFiber(t)
	for _, sn := range fn.Noise.States {
		switch sn.State {
		case "gt", "r", "m":
			if sn.Model == nil {
				t.Errorf("%s: no model: %s", sn.State, sn.Why)
			}
		case "v":
			if sn.Model != nil || !strings.Contains(sn.Why, "`gt * gt`") || !strings.Contains(sn.Why, "multiplies two noisy values") {
				t.Errorf("v: model %v, why %q; want none because of `gt * gt`", sn.Model, sn.Why)
			}
		}
	}
	if got := len(fn.Noise.States); got != len(fn.States) {
		t.Errorf("%d StateNoise entries, want one per state (%d)", got, len(fn.States))
	}
	// m's model includes the filter it reads: z = (gt, r, m).
	if m := attModel(t, fn, "m"); !slices.Equal(m.States, []string{"gt", "r", "m"}) || m.Target != 2 {
		t.Errorf("model of m: z = %v, target %d", m.States, m.Target)
	}
}

// TestAttenuationUnstableSettings checks the stability checks of the
// filters: at run-time settings and at the defaults.
func TestAttenuationUnstableSettings(t *testing.T) {
	fn := attCompile(t, attInnovation)
	fl := fn.Filter("gt")
	if fl == nil {
		t.Fatal("no filter for gt")
	}
	if !strings.Contains(strings.Join(fl.Stability, " and "), "4 - 3 * omega > 0") {
		t.Errorf("Stability = %q, want it to include 4 - 3 * omega > 0", fl.Stability)
	}
	h, err := fn.ApplySettings([]string{"omega=1.5"})
	if err == nil || !strings.Contains(err.Error(), "spectral radius") || !strings.Contains(err.Error(), "omega=1.5") {
		t.Errorf("ApplySettings(omega=1.5) = %v, %v; want an error with the spectral radius at omega=1.5", h, err)
	}
	for _, ok := range []string{"omega=1.3333", "omega=1.333333", "omega=1.3", "omega=1", "omega=0.9", "omega=0.001", "omega=1e-9"} {
		if _, err := fn.ApplySettings([]string{ok}); err != nil {
			t.Errorf("ApplySettings(%s): %v", ok, err)
		}
	}
	for _, bad := range []string{"omega=1.34", "omega=1.3334", "omega=1.5", "omega=1.999"} {
		if _, err := fn.ApplySettings([]string{bad}); err == nil || !strings.Contains(err.Error(), "spectral radius") {
			t.Errorf("ApplySettings(%s) = %v, want a stability error", bad, err)
		}
	}

	t.Run("fiber.dsl with omega in (0, 2)", func(t *testing.T) {
		src, err := os.ReadFile("../../optimizers/fiber.dsl")
		if err != nil {
			t.Fatal(err)
		}
		const decl = "hyper omega = 0.9 in (0, 1]"
		if !strings.Contains(string(src), decl) {
			t.Fatalf("fiber.dsl does not declare %q any more; update this test", decl)
		}
		wide := strings.Replace(string(src), decl, "hyper omega = 0.9 in (0, 2)", 1)
		fn := attCompile(t, wide)
		h, err := fn.ApplySettings([]string{"omega=1.5"})
		if err == nil || !strings.Contains(err.Error(), "spectral radius") || !strings.Contains(err.Error(), "omega=1.5") {
			t.Errorf("ApplySettings(omega=1.5) = %v, %v; want an error with the spectral radius at omega=1.5", h, err)
		}
		if _, err := fn.ApplySettings([]string{"omega=1.3333"}); err != nil {
			t.Errorf("ApplySettings(omega=1.3333): %v", err)
		}
		if _, err := fn.ApplySettings([]string{"omega=1.34"}); err == nil {
			t.Errorf("ApplySettings(omega=1.34) accepted an unstable filter")
		}
		if _, err := fn.ApplySettings([]string{"omega=1.5", "omega=0.5"}); err != nil {
			t.Errorf("ApplySettings(omega=1.5, omega=0.5): %v (only the result must be stable)", err)
		}
	})

	t.Run("no hypers with the error", func(t *testing.T) {
		// As for a setting out of its range (TestApplySettings).
		h, err := fn.ApplySettings([]string{"omega=1.5"})
		if err != nil && h != nil {
			t.Errorf("ApplySettings(omega=1.5) returned hypers %v with its error", h)
		}
	})

	t.Run("unstable defaults", func(t *testing.T) {
		src := strings.Replace(attInnovation, "hyper omega = 0.9 in (0, 2)", "hyper omega = 1.5 in (0, 2)", 1)
		fn, errs, err := irtest.Compile("test.dsl", []byte(src))
		if err != nil || len(errs) == 0 || fn != nil {
			t.Fatalf("Compile with omega = 1.5 = %v, %v, %v; want a dsl.ErrorList", fn != nil, errs, err)
		}
		var el dsl.ErrorList
		if !errors.As(errs.Err(), &el) {
			t.Fatalf("errors are not a dsl.ErrorList: %T", errs.Err())
		}
		msg := errs.Error()
		for _, w := range []string{"attenuation(gt)", "at the defaults", "spectral radius", "omega=1.5"} {
			if !strings.Contains(msg, w) {
				t.Errorf("error %q does not mention %q", msg, w)
			}
		}
		line := strings.Count(src[:strings.Index(src, "attenuation(gt)")], "\n") + 1
		col := strings.Index(src, "attenuation(gt)") - strings.LastIndex(src[:strings.Index(src, "attenuation(gt)")], "\n")
		if errs[0].Pos.Line != line || errs[0].Pos.Column != col {
			t.Errorf("error at %d:%d, want the call at %d:%d", errs[0].Pos.Line, errs[0].Pos.Column, line, col)
		}
	})

	t.Run("alpha-beta region", func(t *testing.T) {
		// The stable region of the alpha-beta tracker is α > 0, β > 0,
		// 4 − 2α − β > 0 (Jury). CheckStability must agree away from the
		// boundary.
		fn := attCompile(t, attAlphaBeta)
		ia, ib := fn.HyperIndex("alpha"), fn.HyperIndex("beta")
		n := 0
		for i := range 61 {
			for j := range 61 {
				a, b := -0.5+float64(i)*0.05+0.0123, -0.5+float64(j)*0.1+0.0123
				h := fn.DefaultHypers()
				h[ia], h[ib] = a, b
				margin := math.Min(math.Min(math.Abs(a), math.Abs(b)), math.Abs(4-2*a-b))
				if margin < 1e-3 {
					continue
				}
				want := a > 0 && b > 0 && 4-2*a-b > 0
				if got := fn.CheckStability(h) == nil; got != want {
					t.Errorf("alpha=%v beta=%v: stable %v, want %v", a, b, got, want)
				}
				n++
			}
		}
		if n < 3000 {
			t.Errorf("only %d points checked", n)
		}
	})
}

// TestSteadyGainMatchesClosedForm checks the numeric solution the host
// uses against the closed form at the same hypers.
func TestSteadyGainMatchesClosedForm(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		state  string
		points []map[string]float64
	}{
		{"innovation", attInnovation, "gt", []map[string]float64{{"omega": 0.3}, {"omega": 0.9}, {"omega": 1}, {"omega": 1.3}, {"omega": 0.001}}},
		{"ema", attEMA, "gt", []map[string]float64{{"kappa": 0.6}, {"kappa": 0.01}, {"kappa": 1}}},
		{"alpha-beta l", attAlphaBeta, "l", []map[string]float64{{"alpha": 0.5, "beta": 0.2}, {"alpha": 1.7, "beta": 0.5}, {"alpha": 0.05, "beta": 0.001}}},
		{"alpha-beta s", attAlphaBeta, "s", []map[string]float64{{"alpha": 0.5, "beta": 0.2}, {"alpha": 1.7, "beta": 0.5}}},
		{"three EMAs", attCascade, "e3", []map[string]float64{{"kappa": 0.3}, {"kappa": 0.77}}},
		{"unfiltered", attUnfiltered, "x", []map[string]float64{{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn := attCompile(t, tt.src)
			fl := fn.Filter(tt.state)
			if fl == nil {
				t.Fatalf("no filter for %s", tt.state)
			}
			g := attSolve(t, fn, tt.state)
			for _, pt := range tt.points {
				h := attHypers(t, fn, pt)
				m, b := fn.FilterValues(fl, h)
				if len(m) != len(fl.States)*len(fl.States) || len(b) != len(fl.States) {
					t.Fatalf("FilterValues: %d×%d model, %d entries of M and %d of b", len(fl.States), len(fl.States), len(m), len(b))
				}
				// FilterValues agrees with the symbolic model at h up to the
				// rounding of its float64 arithmetic.
				x := attPoint(t, fn, h)
				wm, wb := attModelValues(t, attModel(t, fn, tt.state), x)
				for i := range wm {
					if math.Abs(wm[i]-m[i]) > 4e-16*math.Max(1, math.Abs(wm[i])) {
						t.Errorf("at %v: M entry %d = %v, want %v", pt, i, m[i], wm[i])
					}
				}
				for i := range wb {
					if math.Abs(wb[i]-b[i]) > 4e-16*math.Max(1, math.Abs(wb[i])) {
						t.Errorf("at %v: b[%d] = %v, want %v", pt, i, b[i], wb[i])
					}
				}
				a := attEval(t, g.A, x)
				if sg := gain.SteadyGain(m, b, fl.Target); attRelErr(sg, a) > 1e-12 {
					t.Errorf("at %v: SteadyGain %.17g, closed form %.17g", pt, sg, a)
				}
				// On the model evaluated exactly and rounded once, SteadyGain
				// is within the conditioning of the Lyapunov equation,
				// about 1/(1 - ρ²), of float64 rounding (a few ulps of the
				// entries).
				rho := gain.SpectralRadius(wm, len(wb))
				tol := 1e-15 * math.Max(1, 1/(1-rho*rho)) // a few ulps; more with a Jordan block
				if sg := gain.SteadyGain(wm, wb, fl.Target); attRelErr(sg, a) > tol {
					t.Errorf("at %v: SteadyGain of the exact model %.17g, closed form %.17g", pt, sg, a)
				}
			}
		})
	}
	t.Run("no solution", func(t *testing.T) {
		if a := gain.SteadyGain([]float64{1}, []float64{1}, 0); !math.IsNaN(a) {
			t.Errorf("SteadyGain of a random walk = %v, want NaN", a)
		}
		if a := gain.SteadyGain([]float64{math.NaN()}, []float64{1}, 0); !math.IsNaN(a) {
			t.Errorf("SteadyGain with a NaN entry = %v, want NaN", a)
		}
	})
}

// TestFiniteGain checks attenuation_t's host computation: the partial sums
// of the squared impulse response, increasing to A, and the same values
// when asked again out of order.
func TestFiniteGain(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		state string
		set   map[string]float64
	}{
		{"innovation 0.3", attInnovation, "gt", map[string]float64{"omega": 0.3}},
		{"innovation 0.9", attInnovation, "gt", map[string]float64{"omega": 0.9}},
		{"innovation 1 (nilpotent)", attInnovation, "gt", map[string]float64{"omega": 1}},
		{"innovation 1.3", attInnovation, "gt", map[string]float64{"omega": 1.3}},
		{"ema", attEMA, "gt", map[string]float64{"kappa": 0.2}},
		{"alpha-beta l", attAlphaBeta, "l", map[string]float64{"alpha": 0.4, "beta": 0.1}},
		{"alpha-beta s", attAlphaBeta, "s", map[string]float64{"alpha": 0.4, "beta": 0.1}},
		{"three EMAs", attCascade, "e3", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn := attCompile(t, tt.src)
			fl := fn.Filter(tt.state)
			h := attHypers(t, fn, tt.set)
			m, b := fn.FilterValues(fl, h)
			a := gain.SteadyGain(m, b, fl.Target)
			k := len(b)
			g := gain.NewFiniteGain(m, b, fl.Target)
			if got, want := g.At(0), b[fl.Target]*b[fl.Target]; got != want {
				t.Errorf("At(0) = %v, want b[target]² = %v", got, want)
			}
			// Brute force: Σ_{j≤t} ((M^j b)[target])².
			u := append([]float64(nil), b...)
			brute := make([]float64, 2000)
			sum := 0.0
			for j := range brute {
				sum += u[fl.Target] * u[fl.Target]
				brute[j] = sum
				next := make([]float64, k)
				for i := range k {
					for l := range k {
						next[i] += m[i*k+l] * u[l]
					}
				}
				u = next
			}
			first := make([]float64, len(brute))
			g = gain.NewFiniteGain(m, b, fl.Target)
			for tt := range brute {
				first[tt] = g.At(tt)
				if attRelErr(first[tt], brute[tt]) > 1e-13 {
					t.Fatalf("At(%d) = %.17g, brute force %.17g", tt, first[tt], brute[tt])
				}
				if tt > 0 && first[tt] < first[tt-1] {
					t.Fatalf("At(%d) = %.17g < At(%d) = %.17g", tt, first[tt], tt-1, first[tt-1])
				}
				if first[tt] > a*(1+1e-12) {
					t.Fatalf("At(%d) = %.17g exceeds A = %.17g", tt, first[tt], a)
				}
			}
			if attRelErr(first[len(first)-1], a) > 1e-12 {
				t.Errorf("At(%d) = %.17g, want A = %.17g", len(first)-1, first[len(first)-1], a)
			}
			// Out of order: back after going 5 ahead, the same again, and
			// asking twice for the same step.
			g = gain.NewFiniteGain(m, b, fl.Target)
			for _, tt := range []int{0, 7, 12, 7, 7, 3, 8, 0, 0, 40, 35, 36, 1, 100, 95} {
				if got := g.At(tt); math.Float64bits(got) != math.Float64bits(first[tt]) {
					t.Errorf("At(%d) out of order = %.17g, in order %.17g", tt, got, first[tt])
				}
			}
			for tt := 0; tt < 60; tt++ {
				g.At(tt + 5)
				if got := g.At(tt); math.Float64bits(got) != math.Float64bits(first[tt]) {
					t.Fatalf("At(%d) after At(%d) = %.17g, first %.17g", tt, tt+5, got, first[tt])
				}
			}
		})
	}
}

// TestAttenuationInFilterCoefficient compiles steps where a filter's
// coefficient is itself an attenuation value: the model of y has
// attenuation(x) as a symbol, and in the second source x's own model
// reads attenuation(x) (through theta, or through its gain). Compile must
// not panic: it either reports an error at the call or builds filters that
// the host can evaluate.
func TestAttenuationInFilterCoefficient(t *testing.T) {
	tests := []struct{ name, decls, body string }{
		{"another state's attenuation", "hyper beta = 0.5 in (0, 1)\nstate x = 0\nstate y = 0",
			"x = beta * x + g\ny = 0.5 * y + attenuation(x) * x\ntheta = theta - 0.5 * y * attenuation(y)"},
		{"own attenuation through theta", "hyper beta = 0.5 in (0, 1)\nstate x = 0",
			"x = beta * x + g - theta\ntheta = theta + 0.5 * x * attenuation(x)"},
		{"own attenuation as the gain", "hyper beta = 0.5 in (0, 1)\nstate x = 0",
			"x = beta * x + g * attenuation(x)\ntheta = theta - 0.5 * x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := irtest.Program(tt.decls, tt.body)
			var (
				fn   *irtest.Func
				errs dsl.ErrorList
				err  error
			)
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("Compile panicked: %v\nsource:\n%s", r, src)
					}
				}()
				fn, errs, err = irtest.Compile("test.dsl", []byte(src))
			}()
			switch {
			case err != nil:
				t.Fatalf("Compile: internal error %v", err)
			case len(errs) > 0:
				if !strings.Contains(errs.Error(), "attenuation(") {
					t.Errorf("error %q does not name the call", errs)
				}
			default:
				h := fn.DefaultHypers()
				for _, fl := range fn.Filters {
					m, b := fn.FilterValues(fl, h)
					if !allFiniteFloats(m) || !allFiniteFloats(b) {
						t.Errorf("filter of %s at the defaults: M %v, b %v", fl.State, m, b)
					}
				}
				if err := fn.CheckStability(h); err != nil {
					t.Errorf("CheckStability at the defaults: %v", err)
				}
			}
		})
	}
}

// TestAttenuationOldAndNewValue reads a state both before (through a
// local) and after its update: y = x_{t-1} + x_t = (1 + c) x_{t-1} + g.
func TestAttenuationOldAndNewValue(t *testing.T) {
	fn := attCompile(t, irtest.Program("hyper c = 0.5 in (-1, 1)\nstate x = 0\nstate y = 0",
		"old = x\nx = c * x + g\ny = old + x\ntheta = theta - 0.1 * y * attenuation(y)"))
	c := attSym(t, fn, "c")
	one := poly.Int(1)
	m := attModel(t, fn, "y")
	attSameModel(t, "y", m,
		[][]poly.Frac{attFracs(c, poly.Poly{}), attFracs(one.Add(c), poly.Poly{})},
		attFracs(one, one))
	// (1 + c)²/(1 - c²) + 1 = 2/(1 - c).
	if g := attSolve(t, fn, "y"); !g.A.Equal(attFrac(t, poly.Int(2), one.Sub(c))) {
		t.Errorf("A(y) = %v, want 2/(1 - c)", g.A)
	}
	if got := fn.Filter("y").Expr; got != "2 / (1 - c)" {
		t.Errorf("closed form %q, want %q", got, "2 / (1 - c)")
	}
}

// TestAttenuationOpaqueSymbols checks gains that are not rational in the
// hypers: they become symbols of their own.
func TestAttenuationOpaqueSymbols(t *testing.T) {
	tests := []struct {
		body, expr string
		a          func(h float64) float64
	}{
		{"x = (1 - sqrt(kappa)) * x + sqrt(kappa) * g\ntheta = theta - 0.1 * x * attenuation(x)",
			"sqrt(kappa) / (2 - sqrt(kappa))", func(k float64) float64 { return math.Sqrt(k) / (2 - math.Sqrt(k)) }},
		{"x = kappa ** 0.5 * x + g\ntheta = theta - 0.1 * x * attenuation(x)",
			"1 / (1 - (kappa ** 0.5) ** 2)", func(k float64) float64 { return 1 / (1 - k) }},
	}
	for _, tt := range tests {
		fn := attCompile(t, irtest.Program("hyper kappa = 0.36 in (0, 1)\nstate x = 0", tt.body))
		fl := fn.Filter("x")
		if fl.Expr != tt.expr {
			t.Errorf("%s: closed form %q, want %q", tt.body, fl.Expr, tt.expr)
		}
		for _, k := range []float64{0.36, 0.81, 0.01} {
			h := attHypers(t, fn, map[string]float64{"kappa": k})
			m, b := fn.FilterValues(fl, h)
			if got, want := gain.SteadyGain(m, b, fl.Target), tt.a(k); attRelErr(got, want) > 1e-14 {
				t.Errorf("%s at kappa=%v: gain.SteadyGain(FilterValues) = %.17g, want %.17g", tt.body, k, got, want)
			}
		}
	}
}

// TestAttenuationNumeric checks the filters fibergen solves numerically:
// more than MaxSymbolicStates states, or coefficients float64 cannot hold.
func TestAttenuationNumeric(t *testing.T) {
	five := irtest.Program("hyper kappa = 0.3 in (0, 1]\nstate e1 = 0\nstate e2 = 0\nstate e3 = 0\nstate e4 = 0\nstate e5 = 0",
		`e1 = (1 - kappa) * e1 + kappa * g
e2 = (1 - kappa) * e2 + kappa * e1
e3 = (1 - kappa) * e3 + kappa * e2
e4 = (1 - kappa) * e4 + kappa * e3
e5 = (1 - kappa) * e5 + kappa * e4
theta = theta - 0.1 * e5 * attenuation(e5)`)
	long := irtest.Program("hyper lr = 0.1 in (0, 1)\nstate x = 0", "x = 0.123456789012345 * x + g\ntheta = theta - lr * x * attenuation(x)")
	for _, tt := range []struct {
		name, src, state string
		points           []float64 // kappa, if the source has it
	}{
		{"five EMAs", five, "e5", []float64{0.3, 0.8, 1}},
		{"long constant", long, "x", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fn := attCompile(t, tt.src)
			fl := fn.Filter(tt.state)
			if fl == nil {
				t.Fatalf("no filter for %s", tt.state)
			}
			g := attSolve(t, fn, tt.state)
			if g.Numeric == "" || g.Sigma != nil || lower.ClosedForm(g) != nil || fl.Expr != "" {
				t.Errorf("Numeric %q, Sigma %v, Expr %q: want a numeric solution", g.Numeric, g.Sigma != nil, fl.Expr)
			}
			// attenuation stays in the step, for the host to compute.
			found := false
			for _, v := range fn.Step.Values {
				found = found || v.Op == ir.OpAtten && v.Name == tt.state
			}
			if !found {
				t.Errorf("the step has no OpAtten for %s:\n%s", tt.state, fn.Step)
			}
			sets := []map[string]float64{nil}
			if tt.points != nil {
				sets = nil
				for _, k := range tt.points {
					sets = append(sets, map[string]float64{"kappa": k})
				}
			}
			for _, set := range sets {
				h := attHypers(t, fn, set)
				m, b := fn.FilterValues(fl, h)
				if got, want := gain.SteadyGain(m, b, fl.Target), attImpulseSum(m, b, fl.Target); attRelErr(got, want) > 1e-9 {
					t.Errorf("at %v: SteadyGain %.17g, impulse-response sum %.17g", set, got, want)
				}
			}
		})
	}
}

// TestStabilityConditionsMatchSpectralRadius evaluates the symbolic
// stability conditions (Jury's, per strongly connected block) at random
// points and compares them with SpectralRadius < 1.
func TestStabilityConditionsMatchSpectralRadius(t *testing.T) {
	tests := []struct {
		name, src, state string
		box              map[string][2]float64
	}{
		{"innovation", attInnovation, "gt", map[string][2]float64{"omega": {-1, 3}}},
		{"alpha-beta", attAlphaBeta, "l", map[string][2]float64{"alpha": {-1, 3}, "beta": {-1, 5}}},
		{"three EMAs", attCascade, "e3", map[string][2]float64{"kappa": {-1, 3}}},
		{"alpha-beta-gamma", attABG, "x", map[string][2]float64{"alpha": {-0.5, 2.5}, "beta": {-0.5, 3}, "gamma": {-0.5, 2}}},
		{"fiber m", "", "m", map[string][2]float64{"omega": {-1, 3}, "beta1": {-1.5, 1.5}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var fn *irtest.Func
			if tt.src == "" {
				fn = attFiber(t)
			} else {
				fn = attCompile(t, tt.src)
			}
			model := attModel(t, fn, tt.state)
			conds, note := noise.StabilityConditions(model.M)
			if note != "" {
				t.Fatalf("note %q: want symbolic conditions", note)
			}
			rng := uint64(12345)
			next := func() float64 { // a small LCG keeps the test deterministic
				rng = rng*6364136223846793005 + 1442695040888963407
				return float64(rng>>11) / (1 << 53)
			}
			checked, stable := 0, 0
			for range 1500 {
				h := fn.DefaultHypers()
				for name, r := range tt.box {
					h[fn.HyperIndex(name)] = r[0] + (r[1]-r[0])*next()
				}
				x := attPoint(t, fn, h)
				mv, _ := attModelValues(t, model, x)
				rho := gain.SpectralRadius(mv, len(model.States))
				if math.Abs(rho-1) < 1e-6 {
					continue
				}
				all, near := true, false
				for _, c := range conds {
					r, err := c.Eval(x)
					if err != nil {
						near = true
						break
					}
					v, _ := r.Float64()
					near = near || math.Abs(v) < 1e-9
					all = all && r.Sign() > 0
				}
				if near {
					continue
				}
				if all != (rho < 1) {
					t.Errorf("at %v: conditions %v hold: %v, spectral radius %v", h, lower.ConditionStrings(conds, fn.Noise.Symbols), all, rho)
				}
				checked++
				if rho < 1 {
					stable++
				}
			}
			if checked < 1100 || stable < 50 || checked-stable < 50 {
				t.Errorf("checked %d points, %d stable: the box does not straddle the boundary", checked, stable)
			}
		})
	}
}

// TestGainAt checks Gain.At, the evaluation of a solved model at hypers.
func TestGainAt(t *testing.T) {
	fn := attCompile(t, attInnovation)
	g := attSolve(t, fn, "gt")
	for _, w := range []float64{0.3, 0.9, 1, 1.3} {
		h := attHypers(t, fn, map[string]float64{"omega": w})
		v := g.At(fn.Func, h)
		// The closed form evaluated exactly at h and rounded once.
		if want := attEval(t, g.A, attPoint(t, fn, h)); !v.Stable || v.A != want || attRelErr(v.A, (2-w)/(4-3*w)) > 1e-14 {
			t.Errorf("omega=%v: At = %+v, want A = %v", w, v, want)
		}
		m, b := fn.FilterValues(fn.Filter("gt"), h)
		if !slices.Equal(v.M, m) || !slices.Equal(v.B, b) {
			t.Errorf("omega=%v: At's model M %v b %v, FilterValues M %v b %v", w, v.M, v.B, m, b)
		}
		if v.SpectralRadius != gain.SpectralRadius(m, 2) {
			t.Errorf("omega=%v: At's spectral radius %v, SpectralRadius %v", w, v.SpectralRadius, gain.SpectralRadius(m, 2))
		}
	}
	v := g.At(fn.Func, attHypers(t, fn, map[string]float64{"omega": 1.5}))
	if v.Stable || !math.IsNaN(v.A) || !(v.SpectralRadius >= 1) {
		t.Errorf("omega=1.5: At = %+v, want unstable with A NaN", v)
	}
	sq := attCompile(t, irtest.Program("hyper kappa = 0.36 in (0, 1)\nstate x = 0",
		"x = (1 - sqrt(kappa)) * x + sqrt(kappa) * g\ntheta = theta - 0.1 * x * attenuation(x)"))
	for _, k := range []float64{0.36, 0.5} {
		v := attSolve(t, sq, "x").At(sq.Func, attHypers(t, sq, map[string]float64{"kappa": k}))
		if want := math.Sqrt(k) / (2 - math.Sqrt(k)); attRelErr(v.A, want) > 1e-15 {
			t.Errorf("sqrt(kappa) gain at kappa=%v: A = %.17g, want %.17g", k, v.A, want)
		}
	}
}

// TestAttenuationHugeCoefficient is a regression test: a coefficient built
// by repeated squaring once gave every large opaque symbol the same name
// (its summarized expression) and overflowed poly's exponents (a panic).
// Such a coefficient now has no model, and attenuation says why.
func TestAttenuationHugeCoefficient(t *testing.T) {
	var b strings.Builder
	b.WriteString("optimizer q\nhyper a = 0.5 in (0, 1)\nstate x = 0\nstep {\n\tp0 = a * a\n")
	for i := 1; i <= 26; i++ {
		fmt.Fprintf(&b, "\tp%d = p%d * p%d\n", i, i-1, i-1)
	}
	b.WriteString("\tx = p26 * x + g\n\ttheta = theta - attenuation(x) * x\n}\n")
	_, errs, err := irtest.Compile("huge.dsl", []byte(b.String()))
	if err != nil || len(errs) != 1 || !strings.Contains(errs[0].Msg, "more than 200 operations, too large to solve for") {
		t.Fatalf("errs %v, err %v; want one error saying the coefficient is too large", errs, err)
	}
}

// allFiniteFloats reports whether no x is NaN or ±Inf.
func allFiniteFloats(xs []float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// TestNoiseWhyThroughAnotherState: a state whose update reads another
// state's new value, not linear in the noise, is told so through that
// state's statement, where the reason lies; one whose own statement holds
// the same reason is told of its own.
func TestNoiseWhyThroughAnotherState(t *testing.T) {
	fn := attCompile(t, `optimizer p
hyper lr = 0.1
hyper beta = 0.9 in [0, 1)
state v = 0
state z = 0
state w = 0
state y = 0
step {
	v = beta * v + (1 - beta) * g * g
	z = z - lr * g / (sqrt(v) + 1)
	w = beta * w + (1 - beta) * g * g
	y = beta * y + (1 - beta) * g * g + lr * v
	theta = theta - z - w - y
}
`)
	want := map[string]string{
		"v": "in `v = beta * v + (1 - beta) * g * g` (line 9), `(1 - beta) * g * g` multiplies two noisy values",
		"z": "in `z = z - lr * g / (sqrt(v) + 1)` (line 10), through v's update `v = beta * v + (1 - beta) * g * g` (line 9): `(1 - beta) * g * g` multiplies two noisy values",
		"w": "in `w = beta * w + (1 - beta) * g * g` (line 11), `(1 - beta) * g * g` multiplies two noisy values",
		"y": "in `y = beta * y + (1 - beta) * g * g + lr * v` (line 12), `(1 - beta) * g * g` multiplies two noisy values",
	}
	for _, sn := range fn.Noise.States {
		if sn.Why != want[sn.State] {
			t.Errorf("%s: why %q\n\twant %q", sn.State, sn.Why, want[sn.State])
		}
	}
}

// TestNoiseThroughReductions: a state fed a reduction of a noisy value —
// per tensor, per row or per column, added or folded — is reached by the
// noise, though not coordinate by coordinate: no model, and the reason
// says so (it once said that the noise never reached it). A reduction of
// values the noise never reaches carries none.
func TestNoiseThroughReductions(t *testing.T) {
	fn := attCompile(t, `optimizer thru
hyper rho = 0.9
state a = 0
state b = 0
state c = 0
state q: rows = 0
state d = 0
state e = 0
step {
	a = rho * a + 0.1 * mean(g)
	b = max(abs(theta))
	q = 0.5 * q + rowmean(g)
	c = 0.5 * c + q
	d = rho * d + g * norm(g)
	e = rho * e + sum(e * 0 + 1)
	theta = theta - a - b - c - d - e
}
`)
	want := map[string]string{
		"a": "`0.1 * mean(g)` carries the noise through a reduction",
		"b": "`max(abs(theta))` carries the noise through a reduction",
		"c": "carries the noise through a reduction",
		"d": "the coefficient of g reads a norm, sum, mean, max or min",
		"e": "the noise never reaches e",
	}
	growth := map[string]string{"a": "x0", "c": "1/2"} // a recursion a reduction adds noise to: M is checked for growth (x0 is rho)
	if s := fn.Noise.Symbols; len(s) == 0 || s[0].Name != "rho" {
		t.Fatalf("symbol x0 is %v, not hyper rho", s)
	}
	for _, sn := range fn.Noise.States {
		if w, ok := want[sn.State]; ok && (sn.Model != nil || !strings.Contains(sn.Why, w)) {
			t.Errorf("%s: model %v, why %q; want none, with %q", sn.State, sn.Model, sn.Why, w)
		}
		m, ok := growth[sn.State]
		switch {
		case ok && (sn.Growth == nil || len(sn.Growth.M) != 1 || sn.Growth.M[0][0].String() != m):
			t.Errorf("%s: growth model %+v, want M = [[%s]]", sn.State, sn.Growth, m)
		case !ok && sn.Growth != nil:
			t.Errorf("%s: growth model %+v, want none", sn.State, sn.Growth)
		}
	}
}

// TestNoiseThroughReductionEdges: a subtracted reduction carries the noise
// as an added one does (it once gave a model with no reason), and a
// recursion that a reduction of its own state feeds back into has no
// growth model, which would check the wrong M, and says so.
func TestNoiseThroughReductionEdges(t *testing.T) {
	for _, tt := range []struct{ body, why string }{
		{"v = rho * v - mean(g)", "`mean(g)` carries the noise through a reduction"},
		{"v = rho * v + g - 0.1 * mean(g)", "`0.1 * mean(g)` carries the noise through a reduction"},
		{"v = 0.5 * v + 0.6 * mean(v) + 0.1 * mean(g)", "so its growth is not checked either"},
	} {
		fn := attCompile(t, "optimizer e\nhyper rho = 0.9\nstate v = 0\nstep {\n\t"+tt.body+"\n\ttheta = theta - v\n}\n")
		sn := fn.Noise.States[0]
		feedback := strings.Contains(tt.why, "growth")
		if sn.Model != nil || !strings.Contains(sn.Why, tt.why) || (sn.Growth == nil) != feedback {
			t.Errorf("%s: model %v, growth %v, why %q; want no model, growth %v, %q", tt.body, sn.Model, sn.Growth, sn.Why, !feedback, tt.why)
		}
	}
}
