package poly

import (
	"errors"
	"math/big"
	"strings"
)

// ErrZeroDenominator is returned when a rational function would have a zero
// denominator: by NewFrac, by Frac.Div for the zero divisor, and by Frac.Eval
// at a pole.
var ErrZeroDenominator = errors.New("poly: zero denominator")

// Frac is the rational function Num/Den in canonical form: Num and Den have
// integer coefficients, are coprime as polynomials, the gcd of all the
// coefficients of Num and Den together is 1, and the first term of Den in
// print order is positive; zero is 0/1. So (x0 - 2)/(3*x0 - 4) is stored as
// (2 - x0)/(4 - 3*x0), and two canonical Fracs are Equal exactly when they
// are the same function.
//
// Build Fracs with NewFrac or FracOf; the methods assume canonical operands
// and return canonical results. As a convenience, a Frac whose Den is the
// zero polynomial, such as the zero value, is read as Num/1.
type Frac struct{ Num, Den Poly }

// NewFrac returns num/den in canonical form, or ErrZeroDenominator if den is
// the zero polynomial.
func NewFrac(num, den Poly) (Frac, error) {
	if den.IsZero() {
		return Frac{}, ErrZeroDenominator
	}
	if num.IsZero() {
		return fracZero(), nil
	}
	cn, n := num.primitive()
	cd, d := den.primitive()
	if g := gcdZ(n, d); !g.isOne() {
		n, d = mustDivZ(n, g), mustDivZ(d, g)
	}
	return scaledFrac(cn.Quo(cn, cd), n, d), nil
}

// FracOf returns the polynomial p as a rational function.
func FracOf(p Poly) Frac {
	if p.IsZero() {
		return fracZero()
	}
	return Frac{Num: Poly{t: p.t}, Den: constInt(p.denom())}
}

// fracZero returns the canonical zero, 0/1.
func fracZero() Frac { return Frac{Den: Int(1)} }

// scaledFrac returns the canonical form of c*n/d, for coprime primitive
// integer polynomials n and d with d's first term positive.
func scaledFrac(c *big.Rat, n, d Poly) Frac {
	return Frac{Num: mulInt(n, c.Num()), Den: mulInt(d, c.Denom())}
}

// mulInt returns the integer polynomial p times the integer c.
func mulInt(p Poly, c *big.Int) Poly {
	if c.Cmp(bigOne) == 0 {
		return p
	}
	return Poly{t: scaleTerms(p.t, c, nil)}
}

// canonical returns the canonical form of n/d for coprime integer
// polynomials n and d (d nonzero): it only normalizes the coefficients.
func canonical(n, d Poly) Frac {
	if n.IsZero() {
		return fracZero()
	}
	cn, n := n.primitive()
	cd, d := d.primitive()
	return scaledFrac(cn.Quo(cn, cd), n, d)
}

// norm returns a with a zero Den read as 1.
func (a Frac) norm() Frac {
	if a.Den.IsZero() {
		return FracOf(a.Num)
	}
	return a
}

// Add returns a + b. Only the gcd of the two denominators and the gcd of
// the new numerator with it are needed: the other factors of the
// denominator are coprime to the numerator already.
func (a Frac) Add(b Frac) Frac {
	a, b = a.norm(), b.norm()
	switch {
	case a.IsZero():
		return b
	case b.IsZero():
		return a
	case a.Den.isOne() && b.Den.isOne():
		return FracOf(a.Num.Add(b.Num))
	case b.Den.isOne():
		return canonical(a.Num.Add(b.Num.Mul(a.Den)), a.Den)
	case a.Den.isOne():
		return canonical(b.Num.Add(a.Num.Mul(b.Den)), b.Den)
	}
	g := gcdZ(a.Den, b.Den)
	da, db := mustDivZ(a.Den, g), mustDivZ(b.Den, g)
	num := a.Num.Mul(db).Add(b.Num.Mul(da))
	if num.IsZero() {
		return fracZero()
	}
	den := da.Mul(b.Den)
	if h := gcdZ(num, g); !h.isOne() {
		num, den = mustDivZ(num, h), mustDivZ(den, h)
	}
	return canonical(num, den)
}

// Sub returns a - b.
func (a Frac) Sub(b Frac) Frac { return a.Add(b.Neg()) }

// Neg returns -a.
func (a Frac) Neg() Frac {
	a = a.norm()
	return Frac{Num: a.Num.Neg(), Den: a.Den}
}

// Mul returns a*b, cancelling the gcds of each numerator with the other
// denominator.
func (a Frac) Mul(b Frac) Frac {
	a, b = a.norm(), b.norm()
	switch {
	case a.IsZero() || b.IsZero():
		return fracZero()
	case a.Den.isOne() && b.Den.isOne():
		return FracOf(a.Num.Mul(b.Num))
	}
	an, ad := cancel(a.Num, b.Den)
	bn, bd := cancel(b.Num, a.Den)
	return canonical(an.Mul(bn), bd.Mul(ad))
}

// cancel returns p/g and q/g for g the gcd of p and q.
func cancel(p, q Poly) (Poly, Poly) {
	g := gcdZ(p, q)
	if g.isOne() {
		return p, q
	}
	return mustDivZ(p, g), mustDivZ(q, g)
}

// Div returns a/b, or ErrZeroDenominator if b is the zero function.
func (a Frac) Div(b Frac) (Frac, error) {
	b = b.norm()
	if b.IsZero() {
		return Frac{}, ErrZeroDenominator
	}
	return a.Mul(canonical(b.Den, b.Num)), nil
}

// IsZero reports whether a is the zero function.
func (a Frac) IsZero() bool { return a.Num.IsZero() }

// Equal reports whether a and b are the same function.
func (a Frac) Equal(b Frac) bool {
	a, b = a.norm(), b.norm()
	return a.Num.Equal(b.Num) && a.Den.Equal(b.Den)
}

// NumTerms returns the number of terms of the numerator and the
// denominator together.
func (a Frac) NumTerms() int { return a.Num.NumTerms() + a.Den.NumTerms() }

// Eval returns the value of a at x (see Poly.Eval), or ErrZeroDenominator
// if the denominator vanishes there.
func (a Frac) Eval(x []*big.Rat) (*big.Rat, error) {
	a = a.norm()
	d := a.Den.Eval(x)
	if d.Sign() == 0 {
		return nil, ErrZeroDenominator
	}
	n := a.Num.Eval(x)
	return n.Quo(n, d), nil
}

// String returns a in a form for debugging, such as "(2 - x0)/(4 - 3*x0)".
func (a Frac) String() string {
	a = a.norm()
	if a.Den.isOne() {
		return a.Num.String()
	}
	num, den := a.Num.String(), a.Den.String()
	if a.Num.NumTerms() > 1 {
		num = "(" + num + ")"
	}
	if strings.ContainsAny(den, " *") {
		den = "(" + den + ")"
	}
	return num + "/" + den
}

// Bits is the size of f's coefficients: the sum of their bit lengths, in
// numerator and denominator. Exact arithmetic costs grow with it.
func (f Frac) Bits() int { return f.Num.bits() + f.Den.bits() }

func (p Poly) bits() int {
	n := 0
	for _, t := range p.t {
		n += t.c.BitLen()
	}
	return n
}
