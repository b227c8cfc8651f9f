// Package gain is the host side of fibergen's noise filters, in float64 and
// exact rational arithmetic: the spectral radius of a filter's matrix (the
// stability check of every hyper setting), the steady-state gain of a filter
// that has no closed form, and the finite-time gain attenuation_t. The
// runtime's interpreter calls it, and fibergen splices the functions a
// generated package needs out of gain.go ([Source]) into that package,
// renamed to unexported names (package gogen), so that both compute the
// same bits from one text. gain.go imports only math and math/big.
package gain

import (
	"math"
	"math/big"
)

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

// Feeding returns the indexes of the states that feed state target of the
// k×k filter m (row major), target included, in increasing order: those
// from which target is reached through nonzero entries (M[i][j] != 0: j
// feeds i). Only they shape target's variance, and M restricted to them is
// a diagonal block of M up to the order of the states, so its eigenvalues
// are some of M's: a state that the hypers cut off (a coupling coefficient
// of 0, as weight decay's wd·θ at wd = 0) cannot make target unstable.
func Feeding(m []float64, k, target int) []int {
	in := make([]bool, k)
	in[target] = true
	for grew := true; grew; {
		grew = false
		for i := 0; i < k; i++ {
			for j := 0; j < k && in[i]; j++ {
				if !in[j] && m[i*k+j] != 0 {
					in[j], grew = true, true
				}
			}
		}
	}
	var idx []int
	for i, ok := range in {
		if ok {
			idx = append(idx, i)
		}
	}
	return idx
}

// restrict returns m (k×k, row major) and b (nil: none) restricted to the
// states idx, and the position of target among them.
func restrict(m, b []float64, k int, idx []int, target int) (rm, rb []float64, t int) {
	for p, i := range idx {
		if i == target {
			t = p
		}
		if b != nil {
			rb = append(rb, b[i])
		}
		for _, j := range idx {
			rm = append(rm, m[i*k+j])
		}
	}
	return rm, rb, t
}

// FeedingRadius is the spectral radius of m (k×k, row major) restricted to
// the states that feed state target (Feeding): the stability that target's
// variance needs.
func FeedingRadius(m []float64, k, target int) float64 {
	idx := Feeding(m, k, target)
	if len(idx) == k {
		return SpectralRadius(m, k)
	}
	rm, _, _ := restrict(m, nil, k, idx, target)
	return SpectralRadius(rm, len(idx))
}

// SteadyGain solves Σ = M Σ Mᵀ + b bᵀ exactly, in rational arithmetic, for
// the float64 entries of m (k×k, row major) and b restricted to the states
// that feed target (Feeding), and returns Σ[target][target] rounded to
// float64; NaN if an entry is not finite or the equation has no solution.
// It eliminates the k(k+1)/2 unknowns Σ[i][j], i ≤ j, Gauss-Jordan style;
// the solution is exact, so any elimination order gives these bits.
func SteadyGain(m, b []float64, target int) float64 {
	if idx := Feeding(m, len(b), target); len(idx) < len(b) {
		m, b, target = restrict(m, b, len(b), idx, target)
	}
	k := len(b)
	if !allFinite(m) || !allFinite(b) {
		return math.NaN()
	}
	n := k * (k + 1) / 2
	a := make([][]*big.Rat, n) // the system, with the right-hand side in column n
	for i := 0; i < k; i++ {
		for j := i; j < k; j++ {
			a[pairIndex(i, j, k)] = lyapunovRow(m, b, i, j)
		}
	}
	if !eliminate(a) {
		return math.NaN()
	}
	t := pairIndex(target, target, k)
	v, _ := new(big.Rat).Quo(a[t][n], a[t][t]).Float64()
	return v
}

// pairIndex is the index of Σ[i][j] = Σ[j][i] among the unknowns.
func pairIndex(i, j, k int) int {
	if i > j {
		i, j = j, i
	}
	return i*k - i*(i-1)/2 + j - i
}

// lyapunovRow is the equation of the unknown Σ[i][j]:
// Σ[i][j] − Σ_{p,q} M[i][p] M[j][q] Σ[p][q] = b[i] b[j].
func lyapunovRow(m, b []float64, i, j int) []*big.Rat {
	k := len(b)
	n := k * (k + 1) / 2
	row := make([]*big.Rat, n+1)
	for c := range row {
		row[c] = new(big.Rat)
	}
	row[pairIndex(i, j, k)].SetInt64(1)
	for p := 0; p < k; p++ {
		for q := 0; q < k; q++ {
			c := row[pairIndex(p, q, k)]
			c.Sub(c, new(big.Rat).Mul(rat(m[i*k+p]), rat(m[j*k+q])))
		}
	}
	row[n].Mul(rat(b[i]), rat(b[j]))
	return row
}

func rat(x float64) *big.Rat { return new(big.Rat).SetFloat64(x) }

// eliminate reduces the augmented system a to diagonal form; false if it is
// singular.
func eliminate(a [][]*big.Rat) bool {
	n := len(a)
	for c := 0; c < n; c++ {
		p := c
		for p < n && a[p][c].Sign() == 0 {
			p++
		}
		if p == n {
			return false
		}
		a[c], a[p] = a[p], a[c]
		for r := 0; r < n; r++ {
			if r == c || a[r][c].Sign() == 0 {
				continue
			}
			factor := new(big.Rat).Quo(a[r][c], a[c][c])
			for x := c; x <= n; x++ {
				a[r][x].Sub(a[r][x], new(big.Rat).Mul(factor, a[c][x]))
			}
		}
	}
	return true
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
