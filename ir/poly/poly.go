package poly

import (
	"fmt"
	"math/big"
	"slices"
	"strings"
)

// Poly is a polynomial in the variables x0, x1, ... with rational
// coefficients. Values are immutable: operations return new polynomials and
// never alias a caller's *big.Rat. The zero value is the zero polynomial.
// Exponents are limited to 65535; operations that would exceed it panic.
type Poly struct {
	// t holds the nonzero terms in print order (see Terms), with integer
	// coefficients; the polynomial is their sum divided by den.
	t []term
	// den is the common denominator of the coefficients: nil for 1,
	// otherwise greater than 1 and coprime to the gcd of the t[i].c.
	den *big.Int
}

// term is the term c * m of a Poly. Terms share their coefficients between
// polynomials, so a term's c is never modified once the term is built.
type term struct {
	m   mono
	deg int // m.degree()
	c   *big.Int
}

// Term is the term Coef * Π x_i^Exp[i] of a polynomial.
type Term struct {
	Coef *big.Rat
	Exp  []int // Exp[i] is the exponent of x_i; trailing zeros trimmed
}

var bigOne = big.NewInt(1)

// cmpTerms compares the monomials of a and b in print order: ascending total
// degree, then descending lexicographic order of the exponent vectors.
func cmpTerms(a, b term) int {
	if a.deg != b.deg {
		if a.deg < b.deg {
			return -1
		}
		return 1
	}
	return strings.Compare(string(b.m), string(a.m))
}

// makePoly returns the polynomial with terms t (sorted, nonzero) over den
// (nil for 1), dividing out any common factor of den and the coefficients.
func makePoly(t []term, den *big.Int) Poly {
	if len(t) == 0 {
		return Poly{}
	}
	if den == nil || den.Cmp(bigOne) == 0 {
		return Poly{t: t}
	}
	g := new(big.Int).Set(den)
	for _, x := range t {
		if g.GCD(nil, nil, g, x.c).Cmp(bigOne) == 0 {
			return Poly{t: t, den: den}
		}
	}
	den = new(big.Int).Quo(den, g)
	if den.Cmp(bigOne) == 0 {
		den = nil
	}
	return Poly{t: scaleTerms(t, nil, g), den: den}
}

// scaleTerms returns the terms c*mul/quo for the terms of t; nil stands for 1.
func scaleTerms(t []term, mul, quo *big.Int) []term {
	s := make([]term, len(t))
	for i, x := range t {
		c := x.c
		if mul != nil {
			c = new(big.Int).Mul(c, mul)
		}
		if quo != nil {
			c = new(big.Int).Quo(c, quo)
		}
		s[i] = term{x.m, x.deg, c}
	}
	return s
}

// Int returns the constant polynomial n.
func Int(n int64) Poly {
	return constInt(big.NewInt(n))
}

// constInt returns the constant polynomial n, sharing n.
func constInt(n *big.Int) Poly {
	if n.Sign() == 0 {
		return Poly{}
	}
	return Poly{t: []term{{c: n}}}
}

// Const returns the constant polynomial r.
func Const(r *big.Rat) Poly {
	if r.Sign() == 0 {
		return Poly{}
	}
	num := new(big.Int).Set(r.Num())
	if r.IsInt() {
		return constInt(num)
	}
	return Poly{t: []term{{c: num}}, den: new(big.Int).Set(r.Denom())}
}

// Var returns the polynomial x_i. It panics if i is negative.
func Var(i int) Poly {
	return Poly{t: []term{{m: monoVarPow(i, 1), deg: 1, c: big.NewInt(1)}}}
}

// Add returns p + q.
func (p Poly) Add(q Poly) Poly { return p.combine(q, false) }

// Sub returns p - q.
func (p Poly) Sub(q Poly) Poly { return p.combine(q, true) }

// combine returns p + q, or p - q if sub is set.
func (p Poly) combine(q Poly, sub bool) Poly {
	switch {
	case q.IsZero():
		return p
	case p.IsZero() && sub:
		return q.Neg()
	case p.IsZero():
		return q
	}
	den, fp, fq := commonDen(p.den, q.den)
	return makePoly(mergeTerms(p.t, q.t, fp, fq, sub), den)
}

// mergeTerms returns the nonzero terms of fa*a + fb*b, or fa*a - fb*b if sub
// is set, for term lists a and b in print order; nil factors stand for 1.
func mergeTerms(a, b []term, fa, fb *big.Int, sub bool) []term {
	t := make([]term, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var x term
		switch c := cmpAt(a, b, i, j); {
		case c < 0:
			x = scaleTerm(a[i], fa, false)
			i++
		case c > 0:
			x = scaleTerm(b[j], fb, sub)
			j++
		default:
			x = addTerms(scaleTerm(a[i], fa, false), scaleTerm(b[j], fb, sub))
			i, j = i+1, j+1
		}
		if x.c.Sign() != 0 {
			t = append(t, x)
		}
	}
	return t
}

// cmpAt compares a[i] and b[j] in print order, where a term of an exhausted
// list comes after all others.
func cmpAt(a, b []term, i, j int) int {
	switch {
	case i == len(a):
		return 1
	case j == len(b):
		return -1
	}
	return cmpTerms(a[i], b[j])
}

// commonDen returns the least common multiple of the denominators a and b,
// and the factors that bring each to it; nil stands for 1.
func commonDen(a, b *big.Int) (den, fa, fb *big.Int) {
	switch {
	case a == nil && b == nil:
		return nil, nil, nil
	case a == nil:
		return b, b, nil
	case b == nil:
		return a, nil, a
	}
	g := new(big.Int).GCD(nil, nil, a, b)
	fa = new(big.Int).Quo(b, g)
	fb = new(big.Int).Quo(a, g)
	return new(big.Int).Mul(a, fa), nilIfOne(fa), nilIfOne(fb)
}

// nilIfOne returns nil if n is 1, and n otherwise.
func nilIfOne(n *big.Int) *big.Int {
	if n.Cmp(bigOne) == 0 {
		return nil
	}
	return n
}

// scaleTerm returns x with its coefficient multiplied by f (nil for 1) and
// negated if neg is set.
func scaleTerm(x term, f *big.Int, neg bool) term {
	if f == nil && !neg {
		return x
	}
	c := new(big.Int).Set(x.c)
	if f != nil {
		c.Mul(c, f)
	}
	if neg {
		c.Neg(c)
	}
	return term{x.m, x.deg, c}
}

// addTerms returns the sum of two terms with the same monomial.
func addTerms(a, b term) term {
	return term{a.m, a.deg, new(big.Int).Add(a.c, b.c)}
}

// Neg returns -p.
func (p Poly) Neg() Poly {
	t := make([]term, len(p.t))
	for i, x := range p.t {
		t[i] = term{x.m, x.deg, new(big.Int).Neg(x.c)}
	}
	return Poly{t: t, den: p.den}
}

// Scale returns r*p.
func (p Poly) Scale(r *big.Rat) Poly {
	if r.Sign() == 0 || p.IsZero() {
		return Poly{}
	}
	var den *big.Int
	if !r.IsInt() {
		den = new(big.Int).Mul(p.denom(), r.Denom())
	} else if p.den != nil {
		den = p.den
	}
	return makePoly(scaleTerms(p.t, r.Num(), nil), den)
}

// Mul returns p*q.
func (p Poly) Mul(q Poly) Poly {
	if p.IsZero() || q.IsZero() {
		return Poly{}
	}
	den := mulDen(p.den, q.den)
	if len(p.t) == 1 {
		p, q = q, p
	}
	if len(q.t) == 1 {
		return makePoly(mulTerm(p.t, q.t[0]), den)
	}
	acc := make(map[mono]*big.Int, len(p.t)+len(q.t))
	var buf []byte
	tmp := new(big.Int)
	for _, a := range p.t {
		for _, b := range q.t {
			buf = appendMul(buf[:0], a.m, b.m)
			if c, ok := acc[mono(buf)]; ok {
				c.Add(c, tmp.Mul(a.c, b.c))
			} else {
				acc[mono(buf)] = new(big.Int).Mul(a.c, b.c)
			}
		}
	}
	return makePoly(sortedTerms(acc), den)
}

// mulDen returns the product of two denominators; nil stands for 1.
func mulDen(a, b *big.Int) *big.Int {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return new(big.Int).Mul(a, b)
}

// mulTerm returns the terms of t multiplied by the term x. Multiplying by a
// monomial keeps print order, so the result needs no sorting.
func mulTerm(t []term, x term) []term {
	s := make([]term, len(t))
	for i, y := range t {
		s[i] = term{y.m.mul(x.m), y.deg + x.deg, new(big.Int).Mul(y.c, x.c)}
	}
	return s
}

// sortedTerms returns the nonzero entries of acc as terms in print order.
func sortedTerms(acc map[mono]*big.Int) []term {
	t := make([]term, 0, len(acc))
	for m, c := range acc {
		if c.Sign() != 0 {
			t = append(t, term{m, m.degree(), c})
		}
	}
	slices.SortFunc(t, cmpTerms)
	return t
}

// Pow returns p^n. It panics if n is negative.
func (p Poly) Pow(n int) Poly {
	if n < 0 {
		panic(fmt.Sprintf("poly: negative power %d", n))
	}
	r := Int(1)
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			r = r.Mul(p)
		}
		if n > 1 {
			p = p.Mul(p)
		}
	}
	return r
}
