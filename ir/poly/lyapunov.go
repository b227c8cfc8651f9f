package poly

import "math/big"

// Lyapunov returns the symmetric k×k matrix Σ that solves the discrete
// Lyapunov equation Σ = M Σ Mᵀ + b bᵀ, for k = len(b) and M k×k: the
// stationary covariance of the filter z ← M z + b g driven by white noise g
// of unit variance. It solves for the k(k+1)/2 distinct entries of Σ with
// Solve, which gives limit its meaning and returns ErrSingular when the
// equation has no unique solution for generic values of the variables (when
// M has eigenvalues λ and μ, possibly equal, with λμ = 1 identically).
func Lyapunov(m [][]Frac, b []Frac, limit int) ([][]Frac, error) {
	if err := checkSystem(m, b); err != nil {
		return nil, err
	}
	a, y := lyapunovSystem(m, b, fracZero(), FracOf(Int(1)))
	x, err := Solve(a, y, limit)
	if err != nil {
		return nil, err
	}
	return symmetric(x, len(b)), nil
}

// LyapunovRat is Lyapunov over the rationals.
func LyapunovRat(m [][]*big.Rat, b []*big.Rat) ([][]*big.Rat, error) {
	if err := checkSystem(m, b); err != nil {
		return nil, err
	}
	rm := make([][]rat, len(m))
	for i, row := range m {
		rm[i] = rats(row)
	}
	ra, ry := lyapunovSystem(rm, rats(b), rat{new(big.Rat)}, rat{big.NewRat(1, 1)})
	a := make([][]*big.Rat, len(ra))
	y := make([]*big.Rat, len(ry))
	for i, row := range ra {
		a[i], y[i] = unwrap(row), ry[i].v
	}
	x, err := SolveRat(a, y)
	if err != nil {
		return nil, err
	}
	s := symmetric(x, len(b))
	for i := range s {
		for j := range i {
			s[i][j] = new(big.Rat).Set(s[j][i]) // no entry aliases another
		}
	}
	return s, nil
}

// A field is what lyapunovSystem computes with: Frac or rat.
type field[T any] interface {
	Add(T) T
	Sub(T) T
	Mul(T) T
	IsZero() bool
}

// lyapunovSystem returns the linear system A s = y for the entries s of the
// upper triangle of Σ (in the order of pairIndex) that is Σ = M Σ Mᵀ + b bᵀ:
// for i <= j, Σ_ij - Σ_{k,l} M_ik M_jl Σ_kl = b_i b_j, where Σ_kl and Σ_lk
// are the same unknown.
func lyapunovSystem[T field[T]](m [][]T, b []T, zero, one T) ([][]T, []T) {
	k := len(b)
	n := k * (k + 1) / 2
	a, y := make([][]T, n), make([]T, n)
	for i := range k {
		for j := i; j < k; j++ {
			e := pairIndex(i, j, k)
			a[e] = make([]T, n)
			for u := range a[e] {
				a[e][u] = zero
			}
			a[e][e] = one
			for p := range k {
				for q := range k {
					c := m[i][p].Mul(m[j][q])
					if u := pairIndex(min(p, q), max(p, q), k); !c.IsZero() {
						a[e][u] = a[e][u].Sub(c)
					}
				}
			}
			y[e] = b[i].Mul(b[j])
		}
	}
	return a, y
}

// pairIndex returns the index of the unknown Σ_ij, i <= j < k, in row-major
// order of the upper triangle.
func pairIndex(i, j, k int) int {
	return i*k - i*(i-1)/2 + j - i
}

// symmetric returns the k×k symmetric matrix whose upper triangle, in
// row-major order, is x.
func symmetric[T any](x []T, k int) [][]T {
	s := make([][]T, k)
	for i := range s {
		s[i] = make([]T, k)
	}
	for i := range k {
		for j := i; j < k; j++ {
			s[i][j] = x[pairIndex(i, j, k)]
			s[j][i] = s[i][j]
		}
	}
	return s
}

// unwrap returns the *big.Rat values of rs.
func unwrap(rs []rat) []*big.Rat {
	vs := make([]*big.Rat, len(rs))
	for i, r := range rs {
		vs[i] = r.v
	}
	return vs
}
