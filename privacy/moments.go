package privacy

import "math"

// The central moments M(n) = E[(L-1)^n], n even, of the likelihood ratio
// of the Gaussian mechanism, L(x) = p1(x)/p0(x) with p0 = N(0, σ²),
// p1 = N(1, σ²) and x ~ p0. With x = σz, z ~ N(0, 1),
//
//	M(n) = ∫ φ(z) (e^(az-b) - 1)^n dz,  a = 1/σ, b = 1/(2σ²).
//
// The finite-difference form M(n) = Σ_i C(n,i) (-1)^(n-i) e^(i(i-1)/(2σ²))
// cancels catastrophically once σ is large (for σ = 10 and n = 40 the
// terms are 10^30 times the sum), which in floating point gives any
// value, 0 included; the integral has a nonnegative integrand and no
// cancellation at all. We evaluate it by the trapezoidal rule on the
// grid z = kh, which for an analytic integrand decaying like a Gaussian
// converges geometrically in 1/h (Trefethen and Weideman 2014, "The
// exponentially convergent trapezoidal rule", SIAM Review): log of the
// integrand g(z) = -z²/2 + n log|e^(az-b) - 1| is concave on each side of
// its zero z0 = b/a (a sum of concave functions), so each side is one
// peak, scanned from its mode outwards until it falls e^-50 below the
// peak. Its curvature at the mode lies between -1 and -5 for n <= 256
// and σ from 1e-6 to 1e6 (measured), so a peak is at least 0.45 wide,
// and with h = 1/4 the aliasing error of a Gaussian peak that narrow,
// 2e^(-2π²s²/h²), is below 1e-28 of the integral.

// quadStep is the trapezoid step h; quadDepth how far below a side's
// peak its scan goes, in log units.
const (
	quadStep  = 0.25
	quadDepth = 50
)

// centralMoments caches log M(n) for one σ.
type centralMoments struct {
	sigma float64
	logM  map[int]float64
}

func newCentralMoments(sigma float64) *centralMoments {
	return &centralMoments{sigma: sigma, logM: map[int]float64{}}
}

// log returns log M(n) for even n >= 2.
func (m *centralMoments) log(n int) float64 {
	v, ok := m.logM[n]
	if !ok {
		v = logCentralMoment(m.sigma, n)
		m.logM[n] = v
	}
	return v
}

// momentIntegrand is log of the integrand of M(n) without the constant
// -log √(2π), and its derivative.
type momentIntegrand struct{ a, b, n float64 }

func (f momentIntegrand) g(z float64) float64 {
	return -z*z/2 + f.n*logAbsExpm1(f.a*z-f.b)
}

// dg is g'(z) = -z + n a e^u/(e^u - 1) with u = az - b, on either side
// of z0 (it falls from +Inf to -Inf on each).
func (f momentIntegrand) dg(z float64) float64 {
	return -z - f.n*f.a/math.Expm1(-(f.a*z-f.b))
}

// logCentralMoment returns log M(n) by the trapezoidal rule.
func logCentralMoment(sigma float64, n int) float64 {
	f := momentIntegrand{a: 1 / sigma, b: 1 / (2 * sigma * sigma), n: float64(n)}
	z0 := f.b / f.a
	vals := f.scan(f.mode(z0, 1), z0, 1, nil)
	vals = f.scan(f.mode(z0, -1), z0, -1, vals)
	return math.Log(quadStep) - 0.5*math.Log(2*math.Pi) + logSumExp(vals)
}

// mode returns the maximum of g on the side dir (+1: z > z0, -1: z < z0)
// by bisection on g', to within a quarter step.
func (f momentIntegrand) mode(z0, dir float64) float64 {
	near, far := z0, z0+dir
	for f.dg(far)*dir > 0 {
		far = z0 + 2*(far-z0)
	}
	for range 200 {
		if math.Abs(far-near) < quadStep/4 {
			break
		}
		mid := (near + far) / 2
		if f.dg(mid)*dir > 0 {
			near = mid
		} else {
			far = mid
		}
	}
	return (near + far) / 2
}

// scan appends to vals g at the grid points on side dir of z0, from the
// one nearest the mode outwards both ways, until g falls quadDepth below
// its value at the mode or reaches z0.
func (f momentIntegrand) scan(mode, z0, dir float64, vals []float64) []float64 {
	peak := f.g(mode)
	start := math.Round(mode / quadStep)
	if (start*quadStep-z0)*dir <= 0 {
		start += dir
	}
	for _, step := range []float64{1, -1} {
		k := start
		if step < 0 {
			k -= 1
		}
		for ; (k*quadStep-z0)*dir > 0; k += step {
			v := f.g(k * quadStep)
			vals = append(vals, v)
			if v < peak-quadDepth {
				break
			}
		}
	}
	return vals
}
