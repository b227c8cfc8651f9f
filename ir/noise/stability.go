package noise

import (
	"slices"

	"github.com/fibergen/fibergen/ir/poly"
)

// Bounds of the symbolic stability conditions: blocks of more states, or
// whose entries or conditions have more terms, are checked numerically
// only (the conditions would be unreadable).
const (
	maxJuryDegree     = 3
	maxJuryEntryTerms = 60 // all entries of the block together
	maxConditionTerms = 24
)

const numericOnly = "the stability of some states is checked numerically only"

// Conditions are the stability conditions of m's transition, "… > 0"
// fractions that hold together exactly where M is stable, and a note on
// what they leave to the numeric check (Gain.Conditions, for a model
// without a steady state too: a time-varying filter's, over t and the
// scalars).
func Conditions(m *Model) ([]poly.Frac, string) { return stabilityConditions(m.M) }

// stabilityConditions derives conditions "… > 0" that hold together
// exactly when every eigenvalue of m lies inside the unit circle. The
// eigenvalues of m are those of the diagonal blocks of its strongly
// connected components, and for each block Jury's conditions on its
// characteristic polynomial are necessary and sufficient. The note says
// what is left to the numeric check; symbols name the fractions' variables
// for printing, which the caller does (conditions are returned as fractions
// printed by StabilityStrings).
func stabilityConditions(m [][]poly.Frac) (conds []poly.Frac, note string) {
	for _, block := range components(m) {
		b := sub(m, block)
		if len(block) > maxJuryDegree || entryTerms(b) > maxJuryEntryTerms {
			note = numericOnly
			continue
		}
		c := juryConditions(charPoly(b))
		if slices.ContainsFunc(c, func(f poly.Frac) bool { return f.NumTerms() > maxConditionTerms }) {
			note = numericOnly
			continue
		}
		conds = append(conds, c...)
	}
	return dedupe(conds), note
}

func entryTerms(m [][]poly.Frac) int {
	n := 0
	for _, row := range m {
		for _, f := range row {
			n += f.NumTerms()
		}
	}
	return n
}

// components returns the strongly connected components of the graph with
// an edge i → j where m[i][j] is not zero.
func components(m [][]poly.Frac) [][]int {
	k := len(m)
	reach := make([][]bool, k)
	for i := range reach {
		reach[i] = make([]bool, k)
		reach[i][i] = true
		for j := range k {
			reach[i][j] = reach[i][j] || !m[i][j].IsZero()
		}
	}
	for via := range k {
		for i := range k {
			for j := range k {
				reach[i][j] = reach[i][j] || reach[i][via] && reach[via][j]
			}
		}
	}
	var out [][]int
	done := make([]bool, k)
	for i := range k {
		if done[i] {
			continue
		}
		var c []int
		for j := range k {
			if reach[i][j] && reach[j][i] {
				c, done[j] = append(c, j), true
			}
		}
		out = append(out, c)
	}
	return out
}

func sub(m [][]poly.Frac, idx []int) [][]poly.Frac {
	out := make([][]poly.Frac, len(idx))
	for a, i := range idx {
		for _, j := range idx {
			out[a] = append(out[a], m[i][j])
		}
	}
	return out
}

// charPoly returns the coefficients c[0..n] of det(λI - m), c[n] = 1, by
// the Faddeev–LeVerrier recursion.
func charPoly(m [][]poly.Frac) []poly.Frac {
	n := len(m)
	c := make([]poly.Frac, n+1)
	c[n] = fracInt(1)
	acc := identity(n, fracInt(0)) // M_0 = 0
	for k := 1; k <= n; k++ {
		acc = addDiag(matMul(m, acc), c[n-k+1]) // M_k = m M_{k-1} + c_{n-k+1} I
		tr := trace(matMul(m, acc))
		c[n-k], _ = tr.Neg().Div(fracInt(int64(k)))
	}
	return c
}

// juryConditions lists Jury's conditions for the monic polynomial c (c[i]
// the coefficient of λ^i) of degree 1 to 3.
func juryConditions(c []poly.Frac) []poly.Frac {
	n := len(c) - 1
	at := func(x int64) poly.Frac { // p(x)
		sum, pow := fracInt(0), fracInt(1)
		for _, ci := range c {
			sum, pow = sum.Add(ci.Mul(pow)), pow.Mul(fracInt(x))
		}
		return sum
	}
	minusOne := at(-1)
	if n%2 == 1 {
		minusOne = minusOne.Neg()
	}
	conds := []poly.Frac{at(1), minusOne}
	if n >= 2 {
		conds = append(conds, fracInt(1).Sub(c[0]), fracInt(1).Add(c[0]))
	}
	if n == 3 {
		// |a0² - 1| > |a0 a2 - a1|, where |a0| < 1 already holds.
		d := fracInt(1).Sub(c[0].Mul(c[0]))
		e := c[0].Mul(c[2]).Sub(c[1])
		conds = append(conds, d.Sub(e), d.Add(e))
	}
	return conds
}

// dedupe drops repeated conditions and those that always hold (positive
// constants); a condition that never holds is kept.
func dedupe(conds []poly.Frac) []poly.Frac {
	var out []poly.Frac
	for _, c := range conds {
		if r, ok := c.Num.Constant(); ok && r.Sign() > 0 {
			if _, ok := c.Den.Constant(); ok {
				continue
			}
		}
		dup := false
		for _, o := range out {
			dup = dup || o.Equal(c)
		}
		if !dup {
			out = append(out, c)
		}
	}
	return out
}

func fracInt(n int64) poly.Frac { return poly.FracOf(poly.Int(n)) }

func identity(n int, diag poly.Frac) [][]poly.Frac {
	out := make([][]poly.Frac, n)
	for i := range out {
		out[i] = make([]poly.Frac, n)
		for j := range out[i] {
			out[i][j] = fracInt(0)
		}
		out[i][i] = diag
	}
	return out
}

func addDiag(m [][]poly.Frac, d poly.Frac) [][]poly.Frac {
	for i := range m {
		m[i][i] = m[i][i].Add(d)
	}
	return m
}

func matMul(a, b [][]poly.Frac) [][]poly.Frac {
	n := len(a)
	out := identity(n, fracInt(0))
	for i := range n {
		for j := range n {
			for k := range n {
				out[i][j] = out[i][j].Add(a[i][k].Mul(b[k][j]))
			}
		}
	}
	return out
}

func trace(m [][]poly.Frac) poly.Frac {
	sum := fracInt(0)
	for i := range m {
		sum = sum.Add(m[i][i])
	}
	return sum
}
