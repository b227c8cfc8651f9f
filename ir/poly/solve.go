package poly

import (
	"errors"
	"fmt"
	"math/big"
)

var (
	// ErrSingular is returned by Solve and SolveRat, and by Lyapunov and
	// LyapunovRat, when the system has no unique solution.
	ErrSingular = errors.New("poly: singular system")
	// ErrTooLarge is returned by Solve and Lyapunov when an intermediate
	// result has more terms than the caller's limit.
	ErrTooLarge = errors.New("poly: intermediate result too large")
)

// Solve solves the square system A x = y over rational functions. It returns
// ErrSingular if A is singular as a matrix of rational functions, and
// ErrTooLarge as soon as any intermediate rational function has more than
// limit terms, numerator and denominator together; a limit <= 0 means no
// limit.
//
// Solve scales each row to polynomial entries (by the lcm of its
// denominators) and runs fraction-free (Bareiss) Gaussian elimination,
// choosing as pivot the candidate with the fewest terms. Every entry it
// builds is then a polynomial p, counted as the rational function p/1. Only
// the final quotients are reduced by a gcd.
func Solve(a [][]Frac, y []Frac, limit int) ([]Frac, error) {
	if err := checkSystem(a, y); err != nil {
		return nil, err
	}
	pa, py := make([][]Poly, len(a)), make([]Poly, len(y))
	for i, row := range a {
		pa[i], py[i] = clearDenominators(row, y[i])
		for _, p := range append(pa[i], py[i]) {
			if tooLarge(p, limit) {
				return nil, ErrTooLarge
			}
		}
	}
	xs, d, err := eliminate(pa, py, Int(1), limit)
	if err != nil {
		return nil, err
	}
	x := make([]Frac, len(xs))
	for i, n := range xs {
		x[i], _ = NewFrac(n, d)
		if limit > 0 && x[i].NumTerms() > limit {
			return nil, ErrTooLarge
		}
	}
	return x, nil
}

// checkSystem reports an error unless a is n×n for n = len(y).
func checkSystem[T any](a [][]T, y []T) error {
	if len(a) != len(y) {
		return fmt.Errorf("poly: %d equations for %d right-hand sides", len(a), len(y))
	}
	for i, row := range a {
		if len(row) != len(y) {
			return fmt.Errorf("poly: row %d has %d entries, want %d", i, len(row), len(y))
		}
	}
	return nil
}

// clearDenominators returns the entries of row and y multiplied by the lcm of
// their denominators, as integer polynomials.
func clearDenominators(row []Frac, y Frac) ([]Poly, Poly) {
	fs := append(append([]Frac(nil), row...), y)
	l := Int(1)
	for i, f := range fs {
		fs[i] = f.norm()
		if g := gcdZ(l, fs[i].Den); !g.Equal(fs[i].Den) {
			l = l.Mul(mustDivZ(fs[i].Den, g))
		}
	}
	ps := make([]Poly, len(fs))
	for i, f := range fs {
		ps[i] = f.Num.Mul(mustDivZ(l, f.Den))
	}
	return ps[:len(row)], ps[len(row)]
}

// A ring is an integral domain for fraction-free elimination: a Poly with
// integer coefficients, or a rat.
type ring[T any] interface {
	Sub(T) T
	Mul(T) T
	IsZero() bool
	size() int          // the cost of using the element as a pivot
	quo(d T) (T, bool)  // the exact quotient by d
	overLimit(int) bool // whether the element has more terms than a limit > 0
}

// eliminate solves a x = y by fraction-free Gaussian elimination (Bareiss).
// It returns the numerators X and the common denominator d of the solution
// x = X/d, where d is ± the determinant of a, so X and d lie in the ring.
func eliminate[T ring[T]](a [][]T, y []T, one T, limit int) ([]T, T, error) {
	n := len(a)
	if n == 0 {
		return nil, one, nil
	}
	w := make([][]T, n)
	for i := range a {
		w[i] = append(append(make([]T, 0, n+1), a[i]...), y[i])
	}
	prev := one
	for k := range n {
		p := pivotRow(w, k)
		if p < 0 {
			return nil, one, ErrSingular
		}
		w[k], w[p] = w[p], w[k]
		if err := eliminateBelow(w, k, prev, limit); err != nil {
			return nil, one, err
		}
		prev = w[k][k]
	}
	x, err := backSubstitute(w, limit)
	return x, prev, err
}

// pivotRow returns the row at or below k whose entry in column k is nonzero
// and smallest, or -1 if there is none.
func pivotRow[T ring[T]](w [][]T, k int) int {
	best := -1
	for i := k; i < len(w); i++ {
		if !w[i][k].IsZero() && (best < 0 || w[i][k].size() < w[best][k].size()) {
			best = i
		}
	}
	return best
}

// eliminateBelow does Bareiss step k: every entry (i, j) with i, j > k
// becomes (w_kk w_ij - w_ik w_kj)/prev, where prev is the previous pivot,
// which divides it exactly.
func eliminateBelow[T ring[T]](w [][]T, k int, prev T, limit int) error {
	for i := k + 1; i < len(w); i++ {
		for j := k + 1; j < len(w[i]); j++ {
			v := w[k][k].Mul(w[i][j])
			if !w[i][k].IsZero() && !w[k][j].IsZero() {
				v = v.Sub(w[i][k].Mul(w[k][j]))
			}
			v = mustQuo(v, prev)
			if v.overLimit(limit) {
				return ErrTooLarge
			}
			w[i][j] = v
		}
	}
	return nil
}

// backSubstitute solves the triangular system left by elimination for the
// numerators X = d x, where d is the last pivot: X_i = (d y_i - Σ_{j>i}
// w_ij X_j)/w_ii, exactly.
func backSubstitute[T ring[T]](w [][]T, limit int) ([]T, error) {
	n := len(w)
	d := w[n-1][n-1]
	x := make([]T, n)
	for i := n - 1; i >= 0; i-- {
		s := d.Mul(w[i][n])
		for j := i + 1; j < n; j++ {
			if !w[i][j].IsZero() {
				s = s.Sub(w[i][j].Mul(x[j]))
			}
		}
		x[i] = mustQuo(s, w[i][i])
		if x[i].overLimit(limit) {
			return nil, ErrTooLarge
		}
	}
	return x, nil
}

// mustQuo returns a/b when b is known to divide a.
func mustQuo[T ring[T]](a, b T) T {
	q, ok := a.quo(b)
	if !ok {
		panic("poly: internal error: inexact division in elimination")
	}
	return q
}

// size returns the number of terms of p.
func (p Poly) size() int { return len(p.t) }

// quo returns p/d for integer polynomials, if d divides p in Z[x...].
func (p Poly) quo(d Poly) (Poly, bool) {
	if d.isOne() {
		return p, true
	}
	return divZ(p, d)
}

// overLimit reports whether p, as the rational function p/1, has more than
// limit terms, for limit > 0.
func (p Poly) overLimit(limit int) bool { return tooLarge(p, limit) }

// tooLarge reports whether p/1 has more than limit > 0 terms.
func tooLarge(p Poly, limit int) bool {
	return limit > 0 && p.NumTerms()+1 > limit
}

// rat is a *big.Rat as a ring (indeed a field) element. Its methods never
// modify their operands.
type rat struct{ v *big.Rat }

// Add, Sub, Mul and IsZero make rat a field for lyapunovSystem.
func (a rat) Add(b rat) rat { return rat{new(big.Rat).Add(a.v, b.v)} }
func (a rat) Sub(b rat) rat { return rat{new(big.Rat).Sub(a.v, b.v)} }
func (a rat) Mul(b rat) rat { return rat{new(big.Rat).Mul(a.v, b.v)} }
func (a rat) IsZero() bool  { return a.v.Sign() == 0 }

// overLimit is false: rationals have no terms to count.
func (a rat) overLimit(int) bool { return false }

// quo returns a/b; every nonzero b divides a.
func (a rat) quo(b rat) (rat, bool) { return rat{new(big.Rat).Quo(a.v, b.v)}, true }

// size returns the number of bits of a's numerator and denominator.
func (a rat) size() int { return a.v.Num().BitLen() + a.v.Denom().BitLen() }

// SolveRat solves the square system A x = y over the rationals, by the same
// elimination as Solve. It returns ErrSingular if A is singular.
func SolveRat(a [][]*big.Rat, y []*big.Rat) ([]*big.Rat, error) {
	if err := checkSystem(a, y); err != nil {
		return nil, err
	}
	ra := make([][]rat, len(a))
	for i, row := range a {
		ra[i] = rats(row)
	}
	xs, d, err := eliminate(ra, rats(y), rat{big.NewRat(1, 1)}, 0)
	if err != nil {
		return nil, err
	}
	x := make([]*big.Rat, len(xs))
	for i, n := range xs {
		x[i] = new(big.Rat).Quo(n.v, d.v)
	}
	return x, nil
}

// rats wraps each of vs as a rat.
func rats(vs []*big.Rat) []rat {
	r := make([]rat, len(vs))
	for i, v := range vs {
		r[i] = rat{v}
	}
	return r
}
