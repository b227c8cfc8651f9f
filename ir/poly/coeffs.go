package poly

// isConst reports whether p has no variables.
func (p Poly) isConst() bool {
	return len(p.t) == 0 || len(p.t) == 1 && p.t[0].m == ""
}

// isOne reports whether p is the constant 1.
func (p Poly) isOne() bool {
	return len(p.t) == 1 && p.t[0].m == "" && p.den == nil && p.t[0].c.Cmp(bigOne) == 0
}

// maxVar returns the highest index of a variable of p, -1 if there is none.
func (p Poly) maxVar() int {
	v := -1
	for _, x := range p.t {
		v = max(v, x.m.nvars()-1)
	}
	return v
}

// degIn returns the degree of p in x_v.
func (p Poly) degIn(v int) int {
	d := 0
	for _, x := range p.t {
		d = max(d, x.m.exp(v))
	}
	return d
}

// coeffIn returns the coefficient of x_v^k in p, a polynomial without x_v.
// Dividing terms by the same power of x_v keeps print order.
func (p Poly) coeffIn(v, k int) Poly {
	var t []term
	for _, x := range p.t {
		if x.m.exp(v) == k {
			t = append(t, term{x.m.without(v), x.deg - k, x.c})
		}
	}
	return makePoly(t, p.den)
}

// coeffsIn returns the nonzero coefficients of p as a polynomial in x_v.
func (p Poly) coeffsIn(v int) []Poly {
	byExp := make(map[int][]term)
	var exps []int
	for _, x := range p.t {
		k := x.m.exp(v)
		if _, ok := byExp[k]; !ok {
			exps = append(exps, k)
		}
		byExp[k] = append(byExp[k], term{x.m.without(v), x.deg - k, x.c})
	}
	cs := make([]Poly, len(exps))
	for i, k := range exps {
		cs[i] = makePoly(byExp[k], p.den)
	}
	return cs
}
