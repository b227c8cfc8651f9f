package tests

import (
	"math"
	"math/rand/v2"
)

// stream is a synthetic sequence of privatized gradients.
type stream struct {
	name    string
	sigmaW2 float64 // the σ_w² the optimizers are told
	// coord returns coordinate i's gradients for T steps.
	coord func(r *rand.Rand, i, T int) []float64
}

// streams are the gradient regimes of the oracle tests. In each, a few
// coordinates are all zero (isZeroCoord).
var streams = []stream{
	// Means that drift linearly and oscillate, unit Gaussian noise, and
	// σ_w² = 1.5, a little above the noise's variance: FiBeR's correction
	// is active where the mean is large and hits the floor where it is
	// near zero.
	{name: "drift", sigmaW2: 1.5, coord: driftCoord(1, gaussian)},
	// The same without the correction.
	{name: "drift-nocorr", sigmaW2: 0, coord: driftCoord(1, gaussian)},
	// Student-t noise with 3 degrees of freedom (infinite kurtosis) and
	// scales from 0.1 to 10.
	{name: "heavy", sigmaW2: 2, coord: scaledCoord(0.1, 10, studentT3)},
	// Scales from 1e-3 to 1e2 and a large σ_w², which floors v̄ for most
	// small coordinates, where FiBeR's step reaches η |m̂| / √ε_v.
	{name: "scales", sigmaW2: 10, coord: scaledCoord(1e-3, 1e2, gaussian)},
}

// isZeroCoord reports the coordinates whose gradient is always zero.
func isZeroCoord(i int) bool { return i < 2 || i%61 == 30 }

// gradients returns a stream's gradients, step-major ([T][n]), as float32.
func (s stream) gradients(r *rand.Rand, n, T int) []float32 {
	g := make([]float32, T*n)
	for i := range n {
		if isZeroCoord(i) {
			continue
		}
		for t, x := range s.coord(r, i, T) {
			g[t*n+i] = float32(x)
		}
	}
	return g
}

func gaussian(r *rand.Rand) float64 { return r.NormFloat64() }

// studentT3 is Student's t with 3 degrees of freedom: finite variance,
// infinite kurtosis, z / √(χ²_3 / 3).
func studentT3(r *rand.Rand) float64 {
	chi2 := 0.0
	for range 3 {
		z := r.NormFloat64()
		chi2 += z * z
	}
	return r.NormFloat64() / math.Sqrt(chi2/3)
}

// driftCoord draws a mean a + b t/T + c sin(2π t/P + φ) per coordinate and
// adds noise of standard deviation scale.
func driftCoord(scale float64, noise func(*rand.Rand) float64) func(*rand.Rand, int, int) []float64 {
	return func(r *rand.Rand, _, T int) []float64 {
		a, b, c := 0.7*r.NormFloat64(), r.NormFloat64(), 0.5*r.Float64()
		period, phase := 20+180*r.Float64(), 2*math.Pi*r.Float64()
		out := make([]float64, T)
		for t := range out {
			mean := a + b*float64(t)/float64(T) + c*math.Sin(2*math.Pi*float64(t)/period+phase)
			out[t] = scale * (mean + noise(r))
		}
		return out
	}
}

// scaledCoord is driftCoord with a scale drawn log-uniformly in [lo, hi].
func scaledCoord(lo, hi float64, noise func(*rand.Rand) float64) func(*rand.Rand, int, int) []float64 {
	return func(r *rand.Rand, i, T int) []float64 {
		scale := lo * math.Pow(hi/lo, r.Float64())
		return driftCoord(scale, noise)(r, i, T)
	}
}

// initialTheta returns θ_0 ~ N(0, 1) as float32.
func initialTheta(r *rand.Rand, n int) []float32 {
	theta := make([]float32, n)
	for i := range theta {
		theta[i] = float32(r.NormFloat64())
	}
	return theta
}

func to64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}
