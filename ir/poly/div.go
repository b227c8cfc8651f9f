package poly

import (
	"math/big"
	"slices"
)

// DivExact returns p/q and true if q divides p exactly, and the zero
// polynomial and false otherwise (including when q is zero).
func (p Poly) DivExact(q Poly) (Poly, bool) {
	if q.IsZero() {
		return Poly{}, false
	}
	cp, pp := p.primitive()
	cq, qq := q.primitive()
	s, ok := divZ(pp, qq)
	if !ok {
		return Poly{}, false
	}
	return s.Scale(cp.Quo(cp, cq)), true
}

// primitive returns the integer polynomial q whose coefficients have gcd 1
// and whose first term is positive, and the rational c with p = c*q. For the
// zero polynomial it returns 0 and the zero polynomial.
func (p Poly) primitive() (*big.Rat, Poly) {
	if p.IsZero() {
		return new(big.Rat), Poly{}
	}
	g := new(big.Int)
	for _, x := range p.t {
		if g.GCD(nil, nil, g, x.c).Cmp(bigOne) == 0 {
			break
		}
	}
	if p.t[0].c.Sign() < 0 {
		g.Neg(g)
	}
	c := new(big.Rat).SetFrac(g, p.denom())
	if g.Cmp(bigOne) == 0 {
		return c, Poly{t: p.t}
	}
	return c, Poly{t: scaleTerms(p.t, nil, g)}
}

// divZ returns p/q and true for integer polynomials p and q (q nonzero) if q
// divides p in Z[x...], and false otherwise. It is long division from the
// leading (last) term: the remainder is kept in a map, with its monomials
// in a heap to find the next leading term, so each step costs only the terms
// of q rather than those of the whole remainder.
func divZ(p, q Poly) (Poly, bool) {
	switch {
	case p.IsZero():
		return Poly{}, true
	case len(q.t) == 1:
		return divTerm(p, q.t[0])
	case p.Degree() < q.Degree():
		return Poly{}, false
	}
	if _, ok := divideTerm(p.t[0], q.t[0]); !ok {
		return Poly{}, false // the trailing terms must divide, too
	}
	r := newRemainder(p)
	lead := q.t[len(q.t)-1]
	var quo []term
	for {
		x, ok := r.pop()
		if !ok {
			break
		}
		if x, ok = divideTerm(x, lead); !ok {
			return Poly{}, false
		}
		quo = append(quo, x)
		r.subMulTerm(q.t[:len(q.t)-1], x)
	}
	slices.Reverse(quo)
	return Poly{t: quo}, true
}

// A remainder is a polynomial under long division: its coefficients by
// monomial, which it owns, and its monomials in a max-heap in print order.
type remainder struct {
	coef  map[mono]*big.Int
	heap  []term // the terms' c are unused
	buf   []byte
	minus *big.Int
}

// newRemainder returns p as a remainder.
func newRemainder(p Poly) *remainder {
	r := &remainder{coef: make(map[mono]*big.Int, 2*len(p.t)), minus: new(big.Int)}
	for _, x := range p.t {
		r.coef[x.m] = new(big.Int).Set(x.c)
	}
	r.heap = make([]term, len(p.t))
	for i, x := range p.t {
		r.heap[len(p.t)-1-i] = term{m: x.m, deg: x.deg} // descending: a heap
	}
	return r
}

// pop removes the leading nonzero term and returns it, or false if the
// remainder is zero.
func (r *remainder) pop() (term, bool) {
	for len(r.heap) > 0 {
		x := r.heap[0]
		n := len(r.heap) - 1
		r.heap[0] = r.heap[n]
		r.heap = r.heap[:n]
		r.siftDown(0)
		c := r.coef[x.m]
		delete(r.coef, x.m)
		if c.Sign() != 0 {
			x.c = c
			return x, true
		}
	}
	return term{}, false
}

// subMulTerm subtracts x times the terms t from the remainder. All products
// come after the last popped term in print order, so none was popped before.
func (r *remainder) subMulTerm(t []term, x term) {
	for _, y := range t {
		r.buf = appendMul(r.buf[:0], y.m, x.m)
		r.minus.Mul(y.c, x.c)
		if c, ok := r.coef[mono(r.buf)]; ok {
			c.Sub(c, r.minus)
			continue
		}
		m := mono(r.buf)
		r.coef[m] = new(big.Int).Neg(r.minus)
		r.push(term{m: m, deg: y.deg + x.deg})
	}
}

// push adds a monomial to the heap.
func (r *remainder) push(x term) {
	r.heap = append(r.heap, x)
	for i := len(r.heap) - 1; i > 0; {
		parent := (i - 1) / 2
		if cmpTerms(r.heap[parent], r.heap[i]) >= 0 {
			break
		}
		r.heap[parent], r.heap[i] = r.heap[i], r.heap[parent]
		i = parent
	}
}

// siftDown restores the heap order below i.
func (r *remainder) siftDown(i int) {
	for {
		top, left, right := i, 2*i+1, 2*i+2
		if left < len(r.heap) && cmpTerms(r.heap[left], r.heap[top]) > 0 {
			top = left
		}
		if right < len(r.heap) && cmpTerms(r.heap[right], r.heap[top]) > 0 {
			top = right
		}
		if top == i {
			return
		}
		r.heap[i], r.heap[top] = r.heap[top], r.heap[i]
		i = top
	}
}

// mustDivZ returns p/q for integer polynomials when q is known to divide p.
func mustDivZ(p, q Poly) Poly {
	s, ok := divZ(p, q)
	if !ok {
		panic("poly: internal error: inexact division of " + p.String() + " by " + q.String())
	}
	return s
}

// divTerm divides every term of p by x, which keeps print order.
func divTerm(p Poly, x term) (Poly, bool) {
	t := make([]term, len(p.t))
	for i, y := range p.t {
		var ok bool
		if t[i], ok = divideTerm(y, x); !ok {
			return Poly{}, false
		}
	}
	return Poly{t: t}, true
}

// divideTerm returns a/b and whether b divides a as a term over Z.
func divideTerm(a, b term) (term, bool) {
	m, ok := a.m.div(b.m)
	if !ok {
		return term{}, false
	}
	c, rem := new(big.Int).QuoRem(a.c, b.c, new(big.Int))
	if rem.Sign() != 0 {
		return term{}, false
	}
	return term{m, a.deg - b.deg, c}, true
}
