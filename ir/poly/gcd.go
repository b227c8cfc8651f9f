package poly

import (
	"cmp"
	"slices"
)

// GCD returns the greatest common divisor of p and q over Q[x0, x1, ...],
// normalized to have integer coefficients with gcd 1 and a positive first
// term in print order. GCD(0, 0) is 0; the gcd of two nonzero constants is 1.
func GCD(p, q Poly) Poly {
	return gcdZ(p, q)
}

// gcdZ is GCD: the heuristic gcd where it succeeds, a recursive primitive
// remainder sequence where it does not.
func gcdZ(p, q Poly) Poly {
	return gcdFinder{heuristic: true}.gcd(p, q)
}

// A gcdFinder finds gcds by a recursive primitive polynomial remainder
// sequence, trying heuGCD first at every level if heuristic is set.
type gcdFinder struct{ heuristic bool }

// gcd returns GCD(p, q). It views p and q as polynomials in their
// highest-indexed variable x_v over Q[x0, ..., x_{v-1}], and returns the gcd
// of their contents times the gcd of their primitive parts.
func (gf gcdFinder) gcd(p, q Poly) Poly {
	_, p = p.primitive()
	_, q = q.primitive()
	switch {
	case p.IsZero():
		return q
	case q.IsZero():
		return p
	case p.isConst() || q.isConst():
		return Int(1)
	case p.Equal(q):
		return p
	}
	if gf.heuristic {
		if g, ok := heuGCD(p, q); ok {
			_, g = g.primitive()
			return g
		}
	}
	v := max(p.maxVar(), q.maxVar())
	switch {
	case p.degIn(v) == 0:
		return gf.gcd(p, gf.contentIn(q, v))
	case q.degIn(v) == 0:
		return gf.gcd(gf.contentIn(p, v), q)
	}
	cp, cq := gf.contentIn(p, v), gf.contentIn(q, v)
	g := gf.prs(mustDivZ(p, cp), mustDivZ(q, cq), v)
	return gf.gcd(cp, cq).Mul(g)
}

// prs returns the gcd of the integer polynomials a and b, both primitive as
// polynomials in x_v and of positive degree in x_v, by a primitive
// polynomial remainder sequence.
func (gf gcdFinder) prs(a, b Poly, v int) Poly {
	if a.degIn(v) < b.degIn(v) {
		a, b = b, a
	}
	for {
		r := prem(a, b, v)
		switch {
		case r.IsZero():
			_, b = b.primitive()
			return b
		case r.degIn(v) == 0:
			return Int(1)
		}
		a, b = b, gf.primitivePartIn(r, v)
	}
}

// prem returns a pseudo-remainder of a by b as polynomials in x_v: a
// multiple of a by a power of b's leading coefficient, minus a multiple of
// b, of lower degree in x_v than b.
func prem(a, b Poly, v int) Poly {
	db := b.degIn(v)
	lb := b.coeffIn(v, db)
	r := a
	for !r.IsZero() {
		dr := r.degIn(v)
		if dr < db {
			break
		}
		shift := term{monoVarPow(v, dr-db), dr - db, bigOne}
		lr := Poly{t: mulTerm(r.coeffIn(v, dr).t, shift)}
		r = r.Mul(lb).Sub(lr.Mul(b))
	}
	return r
}

// primitivePartIn returns p divided by its content in x_v, made primitive
// with a positive first term.
func (gf gcdFinder) primitivePartIn(p Poly, v int) Poly {
	_, p = mustDivZ(p, gf.contentIn(p, v)).primitive()
	return p
}

// contentIn returns the gcd of the coefficients of p as a polynomial in x_v,
// normalized as GCD's result.
func (gf gcdFinder) contentIn(p Poly, v int) Poly {
	cs := p.coeffsIn(v)
	slices.SortFunc(cs, func(a, b Poly) int { return cmp.Compare(len(a.t), len(b.t)) })
	var g Poly
	for _, c := range cs {
		if g = gf.gcd(g, c); g.isConst() {
			return g
		}
	}
	return g
}
