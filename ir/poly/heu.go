package poly

import (
	"math/big"
	"slices"
)

// heuMaxBits bounds the size of the integers heuGCD works with: beyond it,
// the heuristic costs more than a remainder sequence.
const heuMaxBits = 1 << 16

// heuMaxTries bounds the number of evaluations one heuGCD makes, at all
// levels of its recursion together.
const heuMaxTries = 32

// heuGCD returns the gcd in Z[x0, x1, ...] of the integer polynomials f
// and g, up to sign, and true; or false if the heuristic gives up. This is
// the heuristic gcd of Char, Geddes and Gonnet: evaluate the highest
// variable x_v at an integer ξ, find the gcd of the images recursively, and
// rebuild a candidate from its ξ-adic expansion. For ξ ≥ 2 min(|f|∞, |g|∞)
// + 2, a candidate whose primitive part divides both f and g is their gcd
// (up to the integer content, taken separately).
func heuGCD(f, g Poly) (Poly, bool) {
	h := &heuristic{tries: heuMaxTries}
	return h.gcd(f, g)
}

// A heuristic is one heuGCD run, with the evaluations it has left.
type heuristic struct{ tries int }

// gcd is heuGCD with h's budget of evaluations.
func (h *heuristic) gcd(f, g Poly) (Poly, bool) {
	switch {
	case f.IsZero():
		return g, true
	case g.IsZero():
		return f, true
	}
	cf, f := intContent(f)
	cg, g := intContent(g)
	c := new(big.Int).GCD(nil, nil, cf, cg)
	if f.isConst() || g.isConst() {
		return constInt(c), true
	}
	v := max(f.maxVar(), g.maxVar())
	xi := new(big.Int).Add(minNorm(f, g), bigOne)
	for xi.Lsh(xi, 1); h.tries > 0; xi = nextXi(xi) {
		h.tries--
		if evalBits(f, v, xi) > heuMaxBits || evalBits(g, v, xi) > heuMaxBits {
			return Poly{}, false
		}
		if d, ok := h.try(f, g, v, xi); ok {
			return mulInt(d, c), true
		}
	}
	return Poly{}, false
}

// try returns the candidate gcd of f and g from their images at x_v = ξ,
// made primitive, if it divides both.
func (h *heuristic) try(f, g Poly, v int, xi *big.Int) (Poly, bool) {
	img, ok := h.gcd(evalAt(f, v, xi), evalAt(g, v, xi))
	if !ok {
		return Poly{}, false
	}
	_, d := fromXiAdic(img, v, xi).primitive()
	if _, ok := divZ(f, d); !ok {
		return Poly{}, false
	}
	if _, ok := divZ(g, d); !ok {
		return Poly{}, false
	}
	return d, true
}

// nextXi returns the next evaluation point after ξ, ξ·73794·ξ^(1/4)/27011,
// as Char, Geddes and Gonnet suggest.
func nextXi(xi *big.Int) *big.Int {
	q := new(big.Int).Sqrt(new(big.Int).Sqrt(xi))
	q.Mul(q, big.NewInt(73794))
	return q.Quo(q.Mul(q, xi), big.NewInt(27011))
}

// intContent returns the positive gcd of the coefficients of the integer
// polynomial p, and p divided by it.
func intContent(p Poly) (*big.Int, Poly) {
	c, q := p.primitive()
	n := new(big.Int).Abs(c.Num())
	if c.Sign() < 0 {
		q = q.Neg()
	}
	return n, q
}

// minNorm returns the smaller of the largest absolute coefficients of f and g.
func minNorm(f, g Poly) *big.Int {
	nf, ng := maxNorm(f), maxNorm(g)
	if nf.Cmp(ng) < 0 {
		return nf
	}
	return ng
}

// maxNorm returns the largest absolute coefficient of p.
func maxNorm(p Poly) *big.Int {
	n := new(big.Int)
	for _, x := range p.t {
		if x.c.CmpAbs(n) > 0 {
			n.Abs(x.c)
		}
	}
	return n
}

// evalBits estimates the bit length of the coefficients of p at x_v = ξ.
func evalBits(p Poly, v int, xi *big.Int) int {
	return p.degIn(v)*xi.BitLen() + maxNorm(p).BitLen() + len(p.t)
}

// evalAt returns p with x_v replaced by the integer ξ.
func evalAt(p Poly, v int, xi *big.Int) Poly {
	pows := []*big.Int{big.NewInt(1)}
	acc := make(map[mono]*big.Int)
	for _, x := range p.t {
		k := x.m.exp(v)
		for len(pows) <= k {
			pows = append(pows, new(big.Int).Mul(pows[len(pows)-1], xi))
		}
		t := new(big.Int).Mul(x.c, pows[k])
		m := x.m.without(v)
		if c, ok := acc[m]; ok {
			c.Add(c, t)
		} else {
			acc[m] = t
		}
	}
	return Poly{t: sortedTerms(acc)}
}

// fromXiAdic returns the polynomial G in x_v whose coefficients, each taken
// in the symmetric range (-ξ/2, ξ/2], have G(ξ) = h.
func fromXiAdic(h Poly, v int, xi *big.Int) Poly {
	half := new(big.Int).Rsh(xi, 1)
	var t []term
	for k := 0; !h.IsZero(); k++ {
		rest := make([]term, 0, len(h.t))
		for _, x := range h.t {
			q, r := new(big.Int).DivMod(x.c, xi, new(big.Int))
			if r.Cmp(half) > 0 {
				r.Sub(r, xi)
				q.Add(q, bigOne)
			}
			if r.Sign() != 0 {
				t = append(t, term{x.m.mul(monoVarPow(v, k)), x.deg + k, r})
			}
			if q.Sign() != 0 {
				rest = append(rest, term{x.m, x.deg, q})
			}
		}
		h = Poly{t: rest}
	}
	slices.SortFunc(t, cmpTerms)
	return Poly{t: t}
}
