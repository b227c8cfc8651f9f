package poly

import (
	"math/big"
	"strconv"
	"strings"
)

// IsZero reports whether p is the zero polynomial.
func (p Poly) IsZero() bool { return len(p.t) == 0 }

// Constant returns the value of p and true if p has no variables, and
// nil and false otherwise.
func (p Poly) Constant() (*big.Rat, bool) {
	switch {
	case p.IsZero():
		return new(big.Rat), true
	case len(p.t) > 1 || p.t[0].m != "":
		return nil, false
	}
	return new(big.Rat).SetFrac(p.t[0].c, p.denom()), true
}

// Equal reports whether p and q are the same polynomial.
func (p Poly) Equal(q Poly) bool {
	if len(p.t) != len(q.t) || p.denom().Cmp(q.denom()) != 0 {
		return false
	}
	for i, x := range p.t {
		if x.m != q.t[i].m || x.c.Cmp(q.t[i].c) != 0 {
			return false
		}
	}
	return true
}

// NumTerms returns the number of nonzero terms of p.
func (p Poly) NumTerms() int { return len(p.t) }

// Degree returns the total degree of p, and -1 for the zero polynomial.
func (p Poly) Degree() int {
	if p.IsZero() {
		return -1
	}
	return p.t[len(p.t)-1].deg
}

// Vars returns the indices of the variables that occur in p, ascending.
func (p Poly) Vars() []int {
	var seen []bool
	for _, x := range p.t {
		for len(seen) < x.m.nvars() {
			seen = append(seen, false)
		}
		for i := range x.m.nvars() {
			seen[i] = seen[i] || x.m.exp(i) > 0
		}
	}
	var vs []int
	for i, s := range seen {
		if s {
			vs = append(vs, i)
		}
	}
	return vs
}

// Eval returns the value of p at x, where x[i] is the value of x_i. The
// slice may be longer than p needs; it panics if it is shorter.
func (p Poly) Eval(x []*big.Rat) *big.Rat {
	sum := new(big.Rat)
	pows := make(map[[2]int]*big.Rat)
	v, c := new(big.Rat), new(big.Rat)
	for _, t := range p.t {
		v.SetInt(t.c)
		for i := range t.m.nvars() {
			if k := t.m.exp(i); k > 0 {
				v.Mul(v, power(pows, x, i, k))
			}
		}
		sum.Add(sum, v)
	}
	return sum.Quo(sum, c.SetInt(p.denom()))
}

// power returns x[i]^k, remembering it in pows.
func power(pows map[[2]int]*big.Rat, x []*big.Rat, i, k int) *big.Rat {
	if r, ok := pows[[2]int{i, k}]; ok {
		return r
	}
	r := new(big.Rat).SetInt64(1)
	for range k {
		r.Mul(r, x[i])
	}
	pows[[2]int{i, k}] = r
	return r
}

// Terms returns the terms of p in print order: ascending total degree, and
// among terms of equal degree the larger exponent of the lower-indexed
// variable first (so 1, x0, x1, x0^2, x0*x1, x1^2). The result shares
// nothing with p.
func (p Poly) Terms() []Term {
	ts := make([]Term, len(p.t))
	for i, x := range p.t {
		ts[i] = Term{Coef: new(big.Rat).SetFrac(x.c, p.denom()), Exp: x.m.exps()}
	}
	return ts
}

// String returns p in a form for debugging, such as "2 - x0" or
// "1/2 + 3*x0^2*x1/4", with the terms in print order.
func (p Poly) String() string {
	if p.IsZero() {
		return "0"
	}
	var b strings.Builder
	for i, x := range p.t {
		c := new(big.Rat).SetFrac(x.c, p.denom())
		switch {
		case i == 0 && c.Sign() < 0:
			b.WriteString("-")
		case i > 0 && c.Sign() < 0:
			b.WriteString(" - ")
		case i > 0:
			b.WriteString(" + ")
		}
		writeTerm(&b, c.Abs(c), x.m)
	}
	return b.String()
}

// writeTerm writes c*m for a positive c, as "3*x0^2*x1/4".
func writeTerm(b *strings.Builder, c *big.Rat, m mono) {
	num := c.Num().String()
	switch {
	case m == "":
		b.WriteString(num)
	case num != "1":
		b.WriteString(num + "*")
	}
	sep := ""
	for i := range m.nvars() {
		switch k := m.exp(i); {
		case k == 1:
			b.WriteString(sep + "x" + strconv.Itoa(i))
		case k > 1:
			b.WriteString(sep + "x" + strconv.Itoa(i) + "^" + strconv.Itoa(k))
		default:
			continue
		}
		sep = "*"
	}
	if !c.IsInt() {
		b.WriteString("/" + c.Denom().String())
	}
}

// denom returns the common denominator of p's coefficients.
func (p Poly) denom() *big.Int {
	if p.den == nil {
		return bigOne
	}
	return p.den
}
