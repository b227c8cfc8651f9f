package corrnoise

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"slices"
	"strings"
)

// BLT is a buffered linear Toeplitz matrix (Dvijotham et al. 2024,
// "Efficient and Near-Optimal Noise Generation for Streaming Differential
// Privacy"): the lower-triangular Toeplitz matrix of the rational series
//
//	1 + Σ_i Weight_i·x / (1 − Decay_i·x),
//
// coefficients 1, Σ ω_i, Σ ω_i θ_i, Σ ω_i θ_i², …: one buffer per term,
// decaying by θ_i each step. Both a strategy C and its noise filter C⁻¹
// are BLTs of the same number of buffers.
type BLT struct {
	Decay  []float64 `json:"decay"`  // θ_i, each in (0, 1)
	Weight []float64 `json:"weight"` // ω_i
}

// Buffers returns the number of buffers.
func (b BLT) Buffers() int { return len(b.Decay) }

// Validate checks that b has a weight per decay, each decay in (0, 1)
// (a stable buffer that does not oscillate) and finite weights.
func (b BLT) Validate() error {
	if len(b.Decay) != len(b.Weight) {
		return fmt.Errorf("corrnoise: a BLT needs a weight per decay, got %d decays and %d weights", len(b.Decay), len(b.Weight))
	}
	for i, t := range b.Decay {
		if !(t > 0 && t < 1) {
			return fmt.Errorf("corrnoise: decay %d is %v, want it in (0, 1)", i+1, t)
		}
		if math.IsNaN(b.Weight[i]) || math.IsInf(b.Weight[i], 0) {
			return fmt.Errorf("corrnoise: weight %d is %v", i+1, b.Weight[i])
		}
	}
	return nil
}

// Coefficients returns the first n Toeplitz coefficients of b.
func (b BLT) Coefficients(n int) []float64 {
	c := make([]float64, n)
	if n == 0 {
		return c
	}
	c[0] = 1
	for i, t := range b.Decay {
		p := b.Weight[i]
		for l := 1; l < n; l++ {
			c[l] += p
			p *= t
		}
	}
	return c
}

// Inverse returns the BLT of the inverse series. b's series is P(x)/Q(x),
// Q = Π(1 − θ_i x) and P of degree d with P(0) = 1, so the inverse is
// Q/P: its decays θ̂ are the roots of y^d·P(1/y), that is of the secular
// equation 1 + Σ ω_i/(y − θ_i) = 0, and its weights follow from partial
// fractions (PairFromDecays). It is an error if a weight is 0, a root is
// complex or outside (0, 1), or two roots coincide.
func (b BLT) Inverse() (BLT, error) {
	if err := b.Validate(); err != nil {
		return BLT{}, err
	}
	for i, w := range b.Weight {
		if w == 0 {
			return BLT{}, fmt.Errorf("corrnoise: weight %d is 0: the buffer adds nothing, drop it", i+1)
		}
	}
	roots, err := secularRoots(b)
	if err != nil {
		return BLT{}, err
	}
	_, inv, err := PairFromDecays(b.Decay, roots)
	if err != nil {
		return BLT{}, errors.New("corrnoise: the inverse of the BLT: " + strings.TrimPrefix(err.Error(), "corrnoise: "))
	}
	return inv, nil
}

// PairFromDecays returns the strategy C(x) = Π(1 − θ̂_j x)/Π(1 − θ_j x)
// and its noise filter C⁻¹ as BLTs, from the decays θ of the strategy and
// θ̂ of the noise filter (the parameterization of McMahan, Xu & Zhang 2024,
// "A Hassle-free Algorithm for Private Learning in Practice", as
// jax_privacy's blt_pair_from_theta_pair). By partial fractions
//
//	ω_i = Π_j (θ_i − θ̂_j) / Π_{j≠i} (θ_i − θ_j),
//	ω̂_i = Π_j (θ̂_i − θ_j) / Π_{j≠i} (θ̂_i − θ̂_j).
func PairFromDecays(theta, thetaHat []float64) (strategy, noise BLT, err error) {
	if len(theta) != len(thetaHat) {
		return BLT{}, BLT{}, fmt.Errorf("corrnoise: %d strategy decays and %d noise decays", len(theta), len(thetaHat))
	}
	strategy = BLT{Decay: slices.Clone(theta), Weight: residues(theta, thetaHat)}
	noise = BLT{Decay: slices.Clone(thetaHat), Weight: residues(thetaHat, theta)}
	if err := distinct(theta); err != nil {
		return BLT{}, BLT{}, err
	}
	if err := distinct(thetaHat); err != nil {
		return BLT{}, BLT{}, err
	}
	if err := strategy.Validate(); err != nil {
		return BLT{}, BLT{}, err
	}
	return strategy, noise, noise.Validate()
}

// residues returns Π_j (p_i − q_j) / Π_{j≠i} (p_i − p_j) for each i: the
// weights of Π(1 − q_j x)/Π(1 − p_j x) − 1 over the poles 1/p_i.
func residues(p, q []float64) []float64 {
	w := make([]float64, len(p))
	for i, pi := range p {
		w[i] = 1
		for j := range p {
			w[i] *= pi - q[j]
			if j != i {
				w[i] /= pi - p[j]
			}
		}
	}
	return w
}

// minGap is the least distance between two decays of a BLT: closer, the
// partial fractions lose every digit.
const minGap = 1e-12

// distinct refuses two decays closer than minGap.
func distinct(t []float64) error {
	for i := range t {
		for j := i + 1; j < len(t); j++ {
			if math.Abs(t[i]-t[j]) < minGap {
				return fmt.Errorf("corrnoise: decays %d and %d coincide (%v, %v)", i+1, j+1, t[i], t[j])
			}
		}
	}
	return nil
}

// secularRoots returns the roots of y^d·P(1/y), P the numerator of b's
// series, in decreasing order: located by Durand–Kerner on the polynomial
// and polished by Newton's method on the secular equation, which keeps its
// digits where roots cluster near 1.
func secularRoots(b BLT) ([]float64, error) {
	z := durandKerner(numerator(b))
	roots := make([]float64, len(z))
	for i, r := range z {
		if math.Abs(imag(r)) > 1e-7*math.Max(1, cmplx.Abs(r)) {
			return nil, fmt.Errorf("corrnoise: the inverse has a complex decay %v: it is no BLT of real buffers", r)
		}
		roots[i] = real(r)
		if y := polishRoot(b, real(r)); math.Abs(y-real(r)) <= 1e-6*math.Max(1, math.Abs(y)) {
			roots[i] = y
		}
	}
	slices.Sort(roots)
	slices.Reverse(roots)
	return roots, nil
}

// numerator returns the coefficients (ascending powers of y, monic) of
// Π(y − θ_j) + Σ_i ω_i Π_{j≠i}(y − θ_j).
func numerator(b BLT) []float64 {
	p := poly([]float64{1}, b.Decay, -1)
	for i, w := range b.Weight {
		q := poly([]float64{w}, b.Decay, i)
		for k := range q {
			p[k] += q[k]
		}
	}
	return p
}

// poly returns c·Π_{j≠skip}(y − t_j), ascending coefficients, padded to
// degree len(t).
func poly(c []float64, t []float64, skip int) []float64 {
	p := make([]float64, len(t)+1)
	copy(p, c)
	for j, tj := range t {
		if j == skip {
			continue
		}
		for k := len(p) - 1; k >= 0; k-- {
			p[k] *= -tj
			if k > 0 {
				p[k] += p[k-1]
			}
		}
	}
	return p
}

// durandKerner returns the roots of the monic polynomial p (ascending
// coefficients) by the Weierstrass (Durand–Kerner) iteration from the
// usual deterministic start (0.4 + 0.9i)^k.
func durandKerner(p []float64) []complex128 {
	d := len(p) - 1
	z := make([]complex128, d)
	for k := range z {
		z[k] = cmplx.Pow(complex(0.4, 0.9), complex(float64(k), 0))
	}
	for range 500 {
		moved := 0.0
		for i := range z {
			den := complex(1, 0)
			for j := range z {
				if j != i {
					den *= z[i] - z[j]
				}
			}
			step := evalComplex(p, z[i]) / den
			z[i] -= step
			moved = math.Max(moved, cmplx.Abs(step))
		}
		if moved < 1e-15 {
			break
		}
	}
	return z
}

// evalComplex evaluates p (ascending coefficients) at z by Horner's rule.
func evalComplex(p []float64, z complex128) complex128 {
	var v complex128
	for k := len(p) - 1; k >= 0; k-- {
		v = v*z + complex(p[k], 0)
	}
	return v
}

// polishRoot refines a root y of 1 + Σ ω_i/(y − θ_i) by Newton's method,
// taking a step only while it makes the equation's residual smaller.
func polishRoot(b BLT, y float64) float64 {
	f, df := secular(b, y)
	for range 30 {
		if df == 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return y
		}
		next := y - f/df
		fn, dfn := secular(b, next)
		if !(math.Abs(fn) < math.Abs(f)) {
			return y
		}
		y, f, df = next, fn, dfn
	}
	return y
}

// secular returns 1 + Σ ω_i/(y − θ_i) and its derivative at y.
func secular(b BLT, y float64) (f, df float64) {
	f = 1
	for i, t := range b.Decay {
		u := 1 / (y - t)
		f += b.Weight[i] * u
		df -= b.Weight[i] * u * u
	}
	return f, df
}

// errNoBuffers is the error of a design without buffers.
var errNoBuffers = errors.New("corrnoise: a BLT needs at least one buffer")
