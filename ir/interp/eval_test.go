package interp_test

import (
	"github.com/fibergen/fibergen/internal/floatbits"

	"math"
	"math/rand/v2"
	"testing"
)

// specials are inputs where float32 semantics show: signed zeros,
// infinities, NaN, subnormals, the extremes, and values whose exact product
// needs more than 24 bits (so float64 and float32 arithmetic differ).
var specials = []float32{
	0, float32(math.Copysign(0, -1)), 1, -1, 2, 3, -0.5, 0.1, 1.0 / 3,
	float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
	math.SmallestNonzeroFloat32,       // smallest subnormal
	-math.SmallestNonzeroFloat32,      // its negative
	f32bits(0x007fffff),               // largest subnormal
	f32bits(0x00800000),               // smallest normal
	math.MaxFloat32, -math.MaxFloat32, // the extremes
	1 + 1.0/(1<<12), 1 + 1.0/(1<<23), // products round
	1e20, 1e-20, // squares overflow and underflow
}

// pairs returns every (theta, g) pair of specials.
func pairs() (theta, g []float32) {
	for _, a := range specials {
		for _, b := range specials {
			theta, g = append(theta, a), append(g, b)
		}
	}
	return theta, g
}

// Each expectation is written with Go float32 arithmetic, each operation
// wrapped in float32() so that nothing is fused or kept wider.
var opTests = []struct {
	name, decls, body string
	want              func(th, g float32) float32
}{
	{"neg", "", "theta = -g", func(th, g float32) float32 { return -g }},
	{"add", "", "theta = theta + g", func(th, g float32) float32 { return float32(th + g) }},
	{"sub", "", "theta = theta - g", func(th, g float32) float32 { return float32(th - g) }},
	{"mul", "", "theta = theta * g", func(th, g float32) float32 { return float32(th * g) }},
	{"div", "", "theta = theta / g", func(th, g float32) float32 { return float32(th / g) }},
	{"sqrt", "", "theta = sqrt(g)", func(th, g float32) float32 { return float32(math.Sqrt(float64(g))) }},
	{"abs", "", "theta = abs(g)", func(th, g float32) float32 { return float32(math.Abs(float64(g))) }},
	{"min", "", "theta = min(theta, g)", wantMin},
	{"max", "", "theta = max(theta, g)", wantMax},
	{"square", "", "theta = g ** 2", func(th, g float32) float32 { return float32(g * g) }},
	{"cube", "", "theta = g ** 3", func(th, g float32) float32 { return float32(float32(g*g) * g) }},
	{"reciprocal", "", "theta = g ** -1", func(th, g float32) float32 { return float32(1 / g) }},
	{"inverse square", "", "theta = g ** -2", func(th, g float32) float32 { return float32(1 / float32(g*g)) }},
	{"zeroth power", "", "theta = g ** 0", func(th, g float32) float32 { return 1 }},
	{"rounds every op", "", "theta = theta * g - theta - g", func(th, g float32) float32 {
		return float32(float32(float32(th*g)-th) - g)
	}},
	{"host scalar", "hyper lr = 0.1", "theta = theta - lr * g", func(th, g float32) float32 {
		lr := 0.1
		return float32(th - float32(float32(lr)*g))
	}},
	{"uniform f64 then f32", "hyper lr = 0.1", "theta = (1 - lr) * theta + g / (lr * 3)", func(th, g float32) float32 {
		lr := 0.1
		return float32(float32(float32(1-lr)*th) + float32(g/float32(lr*3)))
	}},
	{"uniform f32 op", "hyper lr = 0.1\nstate m = 0", "m = lr\ntheta = theta * (m * 3) + m", func(th, g float32) float32 {
		m := float32(0.1)
		return float32(float32(th*float32(m*3)) + m)
	}},
}

func wantMax(a, b float32) float32 {
	switch {
	case a != a:
		return a
	case b != b:
		return b
	case a > b:
		return a
	}
	return b // b > a, or a tie: the second operand
}

func wantMin(a, b float32) float32 {
	switch {
	case a != a:
		return a
	case b != b:
		return b
	case a < b:
		return a
	}
	return b
}

func TestEvalSemantics(t *testing.T) {
	theta, g := pairs()
	for _, tt := range opTests {
		t.Run(tt.name, func(t *testing.T) {
			p := compile(t, program(tt.decls, tt.body))
			got := step(t, p, p.Func.DefaultHypers(), theta, g, newStates(p, len(theta)))
			bad := 0
			for i := range got {
				if want := tt.want(theta[i], g[i]); !floatbits.Same(got[i], want) {
					if bad++; bad <= 5 {
						t.Errorf("theta=%g (%#08x) g=%g (%#08x): got %g (%#08x), want %g (%#08x)",
							theta[i], math.Float32bits(theta[i]), g[i], math.Float32bits(g[i]),
							got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
					}
				}
			}
			if bad > 5 {
				t.Errorf("%d of %d coordinates differ", bad, len(got))
			}
		})
	}
}

// TestEvalRoundsEachOp makes sure the specials do exercise rounding: on
// them, "rounds every op" differs from the same formula in float64.
func TestEvalRoundsEachOp(t *testing.T) {
	a := float32(1 + 1.0/(1<<12))
	f32 := float32(float32(float32(a*a)-a) - a)
	f64 := float32(float64(a)*float64(a) - float64(a) - float64(a))
	if f32 == f64 {
		t.Fatalf("float32 and float64 agree (%g) on the rounding input", f32)
	}
}

func TestMinMaxRules(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	nan := float32(math.NaN())
	tests := []struct {
		a, b     float32
		min, max float32
	}{
		{0, negZero, negZero, negZero}, // ties give the second operand
		{negZero, 0, 0, 0},
		{1, 1, 1, 1},
		{1, 2, 1, 2},
		{2, 1, 1, 2},
		{nan, 1, nan, nan},
		{1, nan, nan, nan},
		{float32(math.Inf(-1)), nan, nan, nan},
		{float32(math.Inf(-1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Inf(1))},
	}
	theta, g := make([]float32, len(tests)), make([]float32, len(tests))
	for i, tt := range tests {
		theta[i], g[i] = tt.a, tt.b
	}
	pmin, pmax := compile(t, program("", "theta = min(theta, g)")), compile(t, program("", "theta = max(theta, g)"))
	mins := step(t, pmin, nil, theta, g, nil)
	maxs := step(t, pmax, nil, theta, g, nil)
	for i, tt := range tests {
		if !floatbits.Same(mins[i], tt.min) || !floatbits.Same(maxs[i], tt.max) {
			t.Errorf("min(%g, %g) = %g, max = %g; want %g and %g", tt.a, tt.b, mins[i], maxs[i], tt.min, tt.max)
		}
	}
}

// TestMinMaxRulesOnHost checks the same rules on uniform f64 values: the
// sign of the chosen zero shows in 1 / min(a, b).
func TestMinMaxRulesOnHost(t *testing.T) {
	p := compile(t, program("hyper a = 0\nhyper b = 0", "theta = g / min(a, b) + g / max(b, a)"))
	negZero := math.Copysign(0, -1)
	tests := []struct {
		a, b float64
		want float32
	}{
		{0, negZero, invalidNaN()}, // 1/-0 + 1/0
		{negZero, 0, invalidNaN()}, // 1/0 + 1/-0
		{0, 0, float32(math.Inf(1))},
		{negZero, negZero, float32(math.Inf(-1))},
		{1, 2, 1.5},
		{math.NaN(), 2, float32(math.NaN())},
	}
	for _, tt := range tests {
		got := step(t, p, []float64{tt.a, tt.b}, []float32{0}, []float32{1}, nil)[0]
		if !floatbits.Same(got, tt.want) {
			t.Errorf("a=%g b=%g: got %g, want %g", tt.a, tt.b, got, tt.want)
		}
	}
	// min(0, -0) is -0 and max(-0, 0) is 0: 1/min is -inf, 1/max is +inf.
	q := compile(t, program("hyper a = 0\nhyper b = 0", "theta = g / min(a, b) - g / max(b, a)"))
	if got := step(t, q, []float64{0, negZero}, []float32{0}, []float32{1}, nil)[0]; got != float32(math.Inf(-1)) {
		t.Errorf("1/min(0, -0) - 1/max(-0, 0) = %g, want -inf", got)
	}
}

func TestSqrtCorrectlyRounded(t *testing.T) {
	p := compile(t, program("", "theta = sqrt(g)"))
	rng := rand.New(rand.NewPCG(7, 11))
	const n = 20000
	g := make([]float32, n)
	for i := range g {
		// Positive finite values over every exponent, subnormals included.
		g[i] = math.Float32frombits(rng.Uint32N(0x7f800000))
	}
	got := step(t, p, nil, make([]float32, n), g, nil)
	for i, x := range g {
		want := float32(math.Sqrt(float64(x)))
		if !floatbits.Same(got[i], want) {
			t.Fatalf("sqrt(%g) = %g, want %g", x, got[i], want)
		}
		if !roundsToNearest(got[i], x) {
			t.Fatalf("sqrt(%g) = %g is not the nearest float32", x, got[i])
		}
	}
	spot := []struct{ x, want float32 }{
		{4, 2},
		{2, f32bits(0x3fb504f3)},
		{0, 0},
		{float32(math.Copysign(0, -1)), float32(math.Copysign(0, -1))},
		{-1, invalidNaN()},
		{float32(math.Inf(1)), float32(math.Inf(1))},
		{math.SmallestNonzeroFloat32, f32bits(0x1a3504f3)}, // 2^-74.5
		{math.MaxFloat32, f32bits(0x5f7fffff)},
	}
	xs := make([]float32, len(spot))
	for i, s := range spot {
		xs[i] = s.x
	}
	got = step(t, p, nil, make([]float32, len(xs)), xs, nil)
	for i, s := range spot {
		if !floatbits.Same(got[i], s.want) {
			t.Errorf("sqrt(%g) = %g (%#08x), want %g (%#08x)", s.x, got[i], math.Float32bits(got[i]), s.want, math.Float32bits(s.want))
		}
	}
}

// roundsToNearest checks r = sqrt(x) without computing a square root: x
// lies strictly between the squares of the midpoints around r. A midpoint
// has 25 significant bits, so float64 squares it exactly.
func roundsToNearest(r, x float32) bool {
	lo := (float64(math.Nextafter32(r, 0)) + float64(r)) / 2
	hi := (float64(r) + float64(math.Nextafter32(r, float32(math.Inf(1))))) / 2
	return lo*lo < float64(x) && float64(x) < hi*hi
}
