package gain_test

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fibergen/fibergen/gain"
	"github.com/fibergen/fibergen/ir/poly"
)

// TestSteadyGainOneState checks SteadyGain on z ← m z + b w against the
// closed form b²/(1−m²), computed exactly and rounded once: the same bits.
func TestSteadyGainOneState(t *testing.T) {
	for _, c := range []struct{ m, b float64 }{
		{0, 1}, {0.5, 1}, {-0.5, 1}, {0.9, 0.1}, {0.999, 1e-3}, {-0.3, 7}, {1 - 0x1p-40, 1}, {0.25, 1e-200},
	} {
		m, b := rat(c.m), rat(c.b)
		den := new(big.Rat).Sub(big.NewRat(1, 1), new(big.Rat).Mul(m, m))
		want, _ := new(big.Rat).Quo(new(big.Rat).Mul(b, b), den).Float64()
		if got := gain.SteadyGain([]float64{c.m}, []float64{c.b}, 0); math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("SteadyGain(m=%v, b=%v) = %v, want b²/(1−m²) = %v", c.m, c.b, got, want)
		}
	}
}

// TestSteadyGainNaN checks that SteadyGain is NaN where the Lyapunov
// equation has no solution (eigenvalues λ, μ with λμ = 1) or an entry is
// not finite, among the states that feed the target.
func TestSteadyGainNaN(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		name string
		m, b []float64
	}{
		{"unit root", []float64{1}, []float64{1}},
		{"root -1", []float64{-1}, []float64{0.5}},
		{"unit root of two states", []float64{1, 0, 0, 0.5}, []float64{1, 1}},
		{"roots 2 and 1/2", []float64{2, 1, 0, 0.5}, []float64{1, 1}}, // state 1 feeds state 0
		{"unit-root Jordan block", []float64{1, 1, 0, 1}, []float64{0, 1}},
		{"NaN in M", []float64{nan}, []float64{1}},
		{"Inf in M", []float64{0.5, inf, 0, 0.5}, []float64{1, 1}},
		{"Inf in b", []float64{0.5}, []float64{-inf}},
		{"NaN in b", []float64{0.5, 0.1, 0, 0.5}, []float64{1, nan}},
	} {
		if got := gain.SteadyGain(c.m, c.b, 0); !math.IsNaN(got) {
			t.Errorf("%s: SteadyGain = %v, want NaN", c.name, got)
		}
	}
}

// stableModels are filters of one to three states with spectral radius
// at most 0.95 and their state of interest.
var stableModels = []struct {
	name   string
	m, b   []float64
	target int
}{
	{"EMA", []float64{0.9}, []float64{0.1}, 0},
	{"FiBeR at omega=0.3", []float64{0.7, 0.7, -0.3, 0.7}, []float64{0.3, 0.3}, 0},
	{"FiBeR's second state", []float64{0.7, 0.7, -0.3, 0.7}, []float64{0.3, 0.3}, 1},
	{"cascade of three", []float64{0.5, 0, 0, 0.2, 0.6, 0, 0, 0.3, 0.7}, []float64{0.5, 0.1, 0.03}, 2},
	{"oscillating", []float64{0, -0.81, 1, 0}, []float64{1, 0}, 1},
}

// TestFiniteGainConvergesToSteadyGain checks FiniteGain on stable models:
// b[target]² at step 0, nondecreasing, within 1e-12 of SteadyGain after
// 2000 steps, and bit for bit the same after asking for an earlier step
// (which starts over) as a fresh one.
func TestFiniteGainConvergesToSteadyGain(t *testing.T) {
	for _, c := range stableModels {
		g := gain.NewFiniteGain(c.m, c.b, c.target)
		if got, want := g.At(0), c.b[c.target]*c.b[c.target]; got != want {
			t.Errorf("%s: At(0) = %v, want b[target]² = %v", c.name, got, want)
		}
		prev := 0.0
		for step := range 2001 {
			if v := g.At(step); v < prev {
				t.Fatalf("%s: At(%d) = %v < At(%d) = %v", c.name, step, v, step-1, prev)
			}
			prev = g.At(step)
		}
		if steady := gain.SteadyGain(c.m, c.b, c.target); math.Abs(prev-steady) > 1e-12*steady {
			t.Errorf("%s: At(2000) = %.17g, SteadyGain = %.17g", c.name, prev, steady)
		}
		if got, want := g.At(5), gain.NewFiniteGain(c.m, c.b, c.target).At(5); math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%s: At(5) after At(2000) = %v, fresh %v", c.name, got, want)
		}
	}
}

// TestSteadyGainMatchesLyapunovRat checks SteadyGain against ir/poly's
// fraction-free solver of the same equation on random stable models of
// two and three states: both are exact, so the bits are equal.
func TestSteadyGainMatchesLyapunovRat(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 34))
	for _, k := range []int{2, 2, 2, 2, 2, 3, 3, 3, 3, 3} {
		m, b := randomStableModel(r, k)
		target := r.IntN(k)
		sigma, err := poly.LyapunovRat(ratMatrix(m, k), ratVector(b))
		if err != nil {
			t.Fatalf("LyapunovRat(%v, %v): %v", m, b, err)
		}
		want, _ := sigma[target][target].Float64()
		if got := gain.SteadyGain(m, b, target); math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("SteadyGain(%v, %v, %d) = %.17g, LyapunovRat %.17g", m, b, target, got, want)
		}
	}
}

// randomStableModel draws a k-state model with spectral radius below 0.95.
func randomStableModel(r *rand.Rand, k int) (m, b []float64) {
	m, b = make([]float64, k*k), make([]float64, k)
	for i := range m {
		m[i] = 2*r.Float64() - 1
	}
	if rho := gain.SpectralRadius(m, k); rho >= 0.95 {
		for i := range m {
			m[i] = m[i] * 0.9 / rho
		}
	}
	for i := range b {
		b[i] = r.NormFloat64()
	}
	return m, b
}

func rat(x float64) *big.Rat { return new(big.Rat).SetFloat64(x) }

// ratMatrix is the k×k row-major m as rows of rationals.
func ratMatrix(m []float64, k int) [][]*big.Rat {
	rows := make([][]*big.Rat, k)
	for i := range rows {
		rows[i] = ratVector(m[i*k : (i+1)*k])
	}
	return rows
}

func ratVector(xs []float64) []*big.Rat {
	out := make([]*big.Rat, len(xs))
	for i, x := range xs {
		out[i] = rat(x)
	}
	return out
}

// TestFeeding checks which states feed a target, and that a coupling of 0
// (weight decay's wd·θ into a momentum buffer b at wd = 0) leaves an
// integrator θ out of b's radius and steady gain, which are then those of
// b alone: μ and 1/(1−μ²).
func TestFeeding(t *testing.T) {
	const mu, lr = 0.9, 0.1
	coupled := func(wd float64) []float64 { return []float64{mu, wd, -mu * lr, 1 - wd*lr} } // z = (b, θ)
	for _, c := range []struct {
		name   string
		m      []float64
		k, tgt int
		want   []int
	}{
		{"coupled, wd > 0", coupled(0.01), 2, 0, []int{0, 1}},
		{"coupled, wd = 0", coupled(0), 2, 0, []int{0}},
		{"θ is fed by b either way", coupled(0), 2, 1, []int{0, 1}},
		{"a chain 2 → 1 → 0", []float64{0.5, 1, 0, 0, 0.5, 1, 0, 0, 0.5}, 3, 0, []int{0, 1, 2}},
		{"the chain's end", []float64{0.5, 1, 0, 0, 0.5, 1, 0, 0, 0.5}, 3, 2, []int{2}},
		{"a NaN coupling counts", []float64{0.5, math.NaN(), 0, 1}, 2, 0, []int{0, 1}},
	} {
		if got := gain.Feeding(c.m, c.k, c.tgt); !slices.Equal(got, c.want) {
			t.Errorf("%s: Feeding = %v, want %v", c.name, got, c.want)
		}
	}
	m, b := coupled(0), []float64{1, -lr}
	if rho := gain.SpectralRadius(m, 2); rho < 1 {
		t.Fatalf("the whole coupled filter at wd = 0 has radius %v: want θ's integrator, 1", rho)
	}
	if rho := gain.FeedingRadius(m, 2, 0); math.Abs(rho-mu) > 1e-12 {
		t.Errorf("FeedingRadius = %v, want μ = %v", rho, mu)
	}
	want, _ := new(big.Rat).Quo(big.NewRat(1, 1), new(big.Rat).Sub(big.NewRat(1, 1), new(big.Rat).Mul(rat(mu), rat(mu)))).Float64()
	if got := gain.SteadyGain(m, b, 0); got != want {
		t.Errorf("SteadyGain of b at wd = 0 = %v, want 1/(1−μ²) = %v", got, want)
	}
	if got := gain.SteadyGain(m, b, 1); !math.IsNaN(got) {
		t.Errorf("SteadyGain of θ (an integrator) = %v, want NaN", got)
	}
}
